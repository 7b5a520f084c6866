"""The write/read API shared by `MemoryStorage` and the RocksDB `GroupLog` behaves the same on both."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raft_log.storage.node_store import NodeStore
from raft_log.types import (
    CompactedError,
    ConfState,
    Entry,
    HardState,
    Snapshot,
    SnapshotMeta,
    UnavailableError,
)

CONF = ConfState(voters=("n1", "n2", "n3"))
MEMORY_STORAGE_PATH = Path(__file__).resolve().parents[2] / "raft_log" / "storage" / "memory_storage.py"

Storage = object
Commit = Callable[[], None]


def entries(lo: int, hi: int, term: int) -> list[Entry]:
    return [Entry(index=i, term=term, data=f"{term}:{i}".encode()) for i in range(lo, hi)]


@pytest.fixture(scope="module")
def node_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeStore]:
    store = NodeStore.open(tmp_path_factory.mktemp("conformance") / "node.db")
    yield store
    store.close()


_group_numbers = itertools.count()


def rocksdb_storage(node_store: NodeStore) -> tuple[Storage, Commit]:
    return node_store.create_group(f"g{next(_group_numbers)}", CONF), node_store.commit


def memory_storage(_: NodeStore) -> tuple[Storage, Commit]:
    if not MEMORY_STORAGE_PATH.exists():
        pytest.skip("raft_log/storage/memory_storage.py does not exist yet")
    from raft_log.storage.memory_storage import MemoryStorage

    return MemoryStorage(CONF), lambda: None


@pytest.fixture(params=[rocksdb_storage, memory_storage], ids=["rocksdb", "memory"])
def storage(request: pytest.FixtureRequest, node_store: NodeStore) -> tuple[Storage, Commit]:
    return request.param(node_store)


def test_a_new_log_is_empty_at_index_zero_with_its_conf(storage):
    log, _ = storage
    assert (log.first_index(), log.last_index(), log.term(0)) == (1, 0, 0)
    assert log.initial_state() == (HardState(), CONF)
    assert log.snapshot().meta.index == 0
    assert log.snapshot().data == b""


def test_appended_entries_are_read_back_by_range_and_term(storage):
    log, commit = storage
    log.append(entries(1, 4, 1) + entries(4, 7, 2))
    commit()
    assert log.entries(2, 6) == entries(2, 4, 1) + entries(4, 6, 2)
    assert [log.term(i) for i in range(7)] == [0, 1, 1, 1, 2, 2, 2]


def test_a_conflicting_append_replaces_the_suffix(storage):
    log, commit = storage
    log.append(entries(1, 11, 1))
    commit()
    log.append(entries(5, 7, 3))
    commit()
    assert log.last_index() == 6
    assert log.entries(1, 7) == entries(1, 5, 1) + entries(5, 7, 3)


def test_an_append_leaving_a_gap_is_refused(storage):
    log, _ = storage
    log.append(entries(1, 3, 1))
    with pytest.raises(ValueError):
        log.append(entries(5, 6, 1))


def test_entries_stop_at_max_bytes_but_return_at_least_one(storage):
    log, commit = storage
    log.append(entries(1, 11, 1))
    commit()
    size = len(entries(1, 2, 1)[0].data)
    assert len(log.entries(1, 11, max_bytes=0)) == 1
    assert len(log.entries(1, 11, max_bytes=3 * size)) == 3
    assert len(log.entries(1, 11, max_bytes=None)) == 10


def test_hard_state_and_conf_state_are_what_was_set(storage):
    log, commit = storage
    log.set_hard_state(HardState(term=4, vote="n2", commit=0))
    log.set_conf_state(ConfState(voters=("n1",), learners=("n2",)))
    commit()
    assert log.initial_state() == (HardState(term=4, vote="n2", commit=0), ConfState(("n1",), ("n2",)))


def test_snapshot_then_compact_makes_older_indexes_compacted(storage):
    log, commit = storage
    log.append(entries(1, 6, 1) + entries(6, 11, 2))
    log.set_hard_state(HardState(term=2, commit=8))
    snapshot = log.create_snapshot(7, CONF, b"state")
    log.compact(6)
    commit()
    assert snapshot == Snapshot(SnapshotMeta(7, 2, CONF), b"state")
    assert log.snapshot() == snapshot
    assert (log.first_index(), log.last_index(), log.term(6)) == (7, 10, 2)
    with pytest.raises(CompactedError):
        log.term(5)
    with pytest.raises(CompactedError):
        log.entries(6, 8)
    with pytest.raises(UnavailableError):
        log.term(11)
    with pytest.raises(ValueError):
        log.compact(8)


def test_applying_a_leader_snapshot_replaces_the_log(storage):
    log, commit = storage
    log.append(entries(1, 6, 1))
    commit()
    received = Snapshot(SnapshotMeta(30, 5, ConfState(("n1", "n4"))), b"leader")
    log.apply_snapshot(received)
    log.append(entries(31, 33, 5))
    commit()
    assert log.snapshot() == received
    assert log.initial_state()[1] == ConfState(("n1", "n4"))
    assert (log.first_index(), log.last_index(), log.term(30)) == (31, 32, 5)
    assert log.entries(31, 33) == entries(31, 33, 5)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 12), st.integers(0, 6), st.integers(0, 2)),
        st.tuples(st.just("commit_to"), st.integers(0, 40)),
        st.tuples(st.just("snapshot_and_compact"), st.integers(0, 40), st.integers(0, 40)),
        st.tuples(st.just("flush")),
    ),
    max_size=25,
)


def apply(log: Storage, commit: Commit, operation: tuple) -> None:
    """One operation, chosen to be valid for the log's current bounds."""
    kind, *args = operation
    first, last = log.first_index(), log.last_index()
    hard_state, _ = log.initial_state()
    if kind == "append":
        back, count, term_bump = args
        start = max(first, last + 1 - back)
        term = max([log.term(start - 1), hard_state.term]) + term_bump
        if start <= hard_state.commit:
            return  # Raft never rewrites committed entries
        log.append(entries(start, start + count, term))
    elif kind == "commit_to":
        log.set_hard_state(HardState(term=hard_state.term, commit=min(last, max(hard_state.commit, args[0]))))
    elif kind == "snapshot_and_compact":
        at = min(args[0], hard_state.commit)
        if at > log.snapshot().meta.index and at >= first - 1:
            log.create_snapshot(at, CONF, b"s%d" % at)
            log.compact(min(args[1], at))
    else:
        commit()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations)
def test_random_operations_leave_both_storages_in_the_same_state(node_store, operations):
    if not MEMORY_STORAGE_PATH.exists():
        pytest.skip("raft_log/storage/memory_storage.py does not exist yet")
    logs = [memory_storage(node_store), rocksdb_storage(node_store)]
    for operation in operations:
        for log, commit in logs:
            apply(log, commit, operation)
        views = [observed(log) for log, _ in logs]
        assert views[0] == views[1], operation


def observed(log: Storage) -> tuple:
    first, last = log.first_index(), log.last_index()
    return (
        first,
        last,
        log.initial_state(),
        log.snapshot(),
        log.term(first - 1),
        log.entries(first, last + 1),
    )
