"""Writes taken off the loop (`NodeStore.take` / `write_taken` / `finish`): order, visibility, close."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from raft_log.storage.node_store import GroupLog, NodeStore, TakenBatch
from raft_log.types import ConfState, Entry

CONF = ConfState(voters=("n1",))


def entry(index: int) -> Entry:
    return Entry(index=index, term=1, data=f"e{index}".encode())


def open_with_group(path: Path) -> tuple[NodeStore, GroupLog]:
    """A store at `path` holding group "g", committed."""
    store = NodeStore.open(path)
    group = store.create_group("g", CONF)
    store.commit()
    return store, group


def app_values_after_reopen(path: Path, *keys: bytes) -> tuple[bytes | None, ...]:
    """Group "g"'s application values for `keys`, read from the store reopened at `path`."""
    reopened = NodeStore.open(path)
    try:
        return tuple(reopened.group("g").app_get(key) for key in keys)
    finally:
        reopened.close()


def assert_waits_for(taken: TakenBatch, store: NodeStore, waiter: threading.Thread) -> None:
    """`waiter` blocks, whatever the threads' timing, until `taken` is written; then it ends."""
    waiter.start()
    waiter.join(timeout=0.2)
    assert waiter.is_alive()
    store.write_taken(taken, sync=True)
    waiter.join(timeout=10)
    assert not waiter.is_alive()


def test_a_taken_batch_stays_readable_until_written_and_finished(tmp_path: Path) -> None:
    store, group = open_with_group(tmp_path / "db")
    group.append([entry(1)])
    group.app_put(b"k", b"v")
    taken = store.take()
    assert taken is not None
    assert group.entries(1, 2) == [entry(1)] and group.app_get(b"k") == b"v"  # not in the database yet
    store.write_taken(taken, sync=True)
    store.finish(taken)
    assert group.entries(1, 2) == [entry(1)] and group.app_get(b"k") == b"v"  # now read from the database
    assert store.take() is None
    store.close()
    reopened = NodeStore.open(tmp_path / "db")
    assert reopened.group("g").entries(1, 2) == [entry(1)]
    reopened.close()


def test_writes_reach_the_database_in_the_order_they_were_taken(tmp_path: Path) -> None:
    store, group = open_with_group(tmp_path / "db")
    group.app_put(b"k", b"first")
    first = store.take()
    group.app_put(b"k", b"second")
    second = store.take()
    assert first is not None and second is not None
    assert_waits_for(first, store, threading.Thread(target=store.write_taken, args=(second, True)))
    store.finish(first)
    assert group.app_get(b"k") == b"second"
    store.finish(second)
    store.close()
    assert app_values_after_reopen(tmp_path / "db", b"k") == (b"second",)


def test_finishing_an_older_write_keeps_what_was_staged_since(tmp_path: Path) -> None:
    store, group = open_with_group(tmp_path / "db")
    group.append([entry(1)])
    taken = store.take()
    assert taken is not None
    group.append([entry(2)])  # staged while the first write is out
    store.write_taken(taken, sync=True)
    store.finish(taken)
    assert group.entries(1, 3) == [entry(1), entry(2)]  # entry 2 is still only in memory
    store.commit()
    assert group.entries(1, 3) == [entry(1), entry(2)]
    store.close()


def test_a_synchronous_commit_waits_for_a_write_taken_before_it(tmp_path: Path) -> None:
    store, group = open_with_group(tmp_path / "db")
    group.app_put(b"a", b"1")
    taken = store.take()
    assert taken is not None
    group.app_put(b"b", b"2")
    assert_waits_for(taken, store, threading.Thread(target=store.commit))
    store.finish(taken)
    store.close()
    assert app_values_after_reopen(tmp_path / "db", b"a", b"b") == (b"1", b"2")


def test_close_waits_for_a_taken_write(tmp_path: Path) -> None:
    store, group = open_with_group(tmp_path / "db")
    group.app_put(b"k", b"v")
    taken = store.take()
    assert taken is not None
    assert_waits_for(taken, store, threading.Thread(target=store.close))
    assert app_values_after_reopen(tmp_path / "db", b"k") == (b"v",)


def test_a_failed_write_leaves_the_store_unusable(tmp_path: Path) -> None:
    store, group = open_with_group(tmp_path / "db")
    group.app_put(b"k", b"v")
    taken = store.take()
    assert taken is not None
    store._db.close()  # the database goes away under the write
    with pytest.raises(Exception):  # noqa: B017 - whatever rocksdict raises for a closed database
        store.write_taken(taken, sync=True)
    with pytest.raises(Exception, match="reopen the store"):
        store.commit()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_compaction_threads_run_at_the_lowest_cpu_priority(tmp_path: Path) -> None:
    store = NodeStore.open(tmp_path / "db")
    try:
        compaction = [
            int(task.name)
            for task in Path("/proc/self/task").iterdir()
            if (task / "comm").read_text().strip() == "rocksdb:low"
        ]
        assert compaction
        assert all(os.getpriority(os.PRIO_PROCESS, tid) == 19 for tid in compaction)
    finally:
        store.close()
