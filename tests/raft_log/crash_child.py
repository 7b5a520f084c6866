"""Crash-test child: appends synced batches to several groups until killed, acknowledging each one.

Usage: `python crash_child.py DB_PATH GROUPS ENTRIES_PER_BATCH`. After every `commit(sync=True)` it
prints `ack <index>` (flushed): every group holds entries 1..index, all committed. The parent kills it
at random moments and checks, with `check_group`, that every acknowledged entry survived.
"""

from __future__ import annotations

import sys

from raft_log.storage.node_store import GroupLog, NodeStore
from raft_log.types import ConfState, Entry, HardState

CONF = ConfState(voters=("n1", "n2", "n3"))
SNAPSHOT_EVERY = 16
"""Take a snapshot and compact every this many batches."""
KEEP_AFTER_SNAPSHOT = 10


def group_id(number: int) -> str:
    return f"queue-{number}"


def term_of(index: int) -> int:
    return 1 + index // 50


def data_of(gid: str, index: int) -> bytes:
    return f"{gid}:{index}:".encode() * (1 + index % 7 * 8)


def app_key(index: int) -> bytes:
    return b"msg:%012d" % index


def snapshot_data(gid: str, index: int) -> bytes:
    return f"snapshot {gid} at {index}".encode()


def check_group(group: GroupLog, acknowledged: int) -> None:
    """Raise AssertionError unless `group` is a clean log holding every entry up to `acknowledged`."""
    first, last = group.first_index(), group.last_index()
    hard_state, conf = group.initial_state()
    assert last >= acknowledged, f"{group.gid}: last index {last} < acknowledged {acknowledged}"
    assert hard_state.commit >= acknowledged, f"{group.gid}: commit {hard_state.commit} < {acknowledged}"
    assert conf == CONF
    expected = [Entry(i, term_of(i), data=data_of(group.gid, i)) for i in range(first, last + 1)]
    assert group.entries(first, last + 1) == expected, f"{group.gid}: entries {first}..{last} differ"
    snapshot = group.snapshot()
    assert snapshot.meta.index >= first - 1
    if snapshot.meta.index:
        assert snapshot.data == snapshot_data(group.gid, snapshot.meta.index)
        assert snapshot.meta.term == term_of(snapshot.meta.index)
    if acknowledged:
        assert group.app_get(app_key(acknowledged)) == data_of(group.gid, acknowledged)


def stage_batch(group: GroupLog, size: int, take_snapshot: bool) -> int:
    """Stage `size` more entries (all committed) and maybe a snapshot; the new last index."""
    start = group.last_index() + 1
    group.append([Entry(i, term_of(i), data=data_of(group.gid, i)) for i in range(start, start + size)])
    last = start + size - 1
    group.set_hard_state(HardState(term=term_of(last), vote="n1", commit=last))
    group.app_put(app_key(last), data_of(group.gid, last))
    snapshot_at = last - KEEP_AFTER_SNAPSHOT
    if take_snapshot and snapshot_at > group.snapshot().meta.index:
        group.create_snapshot(snapshot_at, CONF, snapshot_data(group.gid, snapshot_at))
        group.compact(snapshot_at)
    return last


def main(db_path: str, groups: int, batch_size: int) -> None:
    store = NodeStore.open(db_path)
    for number in range(groups):
        if group_id(number) not in store.group_ids():
            store.create_group(group_id(number), CONF)
    store.commit()
    for batch in range(sys.maxsize):
        lasts = {
            stage_batch(store.group(group_id(number)), batch_size, batch % SNAPSHOT_EVERY == 0)
            for number in range(groups)
        }
        store.commit(sync=True)
        (last,) = lasts
        sys.stdout.write(f"ack {last}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
