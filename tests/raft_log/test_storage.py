"""Unit and corruption tests of the RocksDB node store (`raft_log.storage.node_store`)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
from rocksdict import AccessType, Options, Rdict

from raft_log.storage import node_store as storage_module
from raft_log.storage import records
from raft_log.storage.database import DatabaseCorruptionError
from raft_log.storage.keys import GroupKeys, registry_key
from raft_log.storage.node_store import CorruptionError, NodeStore, SnapshotOutOfDateError
from raft_log.storage.rocksdb_database import supports_direct_io
from raft_log.types import (
    UNKNOWN_VOTE,
    CompactedError,
    ConfState,
    Entry,
    EntryKind,
    HardState,
    Repair,
    Snapshot,
    SnapshotMeta,
    StorageError,
    UnavailableError,
)

CONF = ConfState(voters=("n1", "n2", "n3"))


def entries(lo: int, hi: int, term: int, size: int = 4) -> list[Entry]:
    """Entries `lo <= index < hi` of `term` whose data names them."""
    return [Entry(index=i, term=term, data=f"{term}:{i}".encode().ljust(size, b".")) for i in range(lo, hi)]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "node.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[NodeStore]:
    opened = NodeStore.open(db_path)
    yield opened
    opened.close()


def reopen(store: NodeStore, db_path: Path) -> NodeStore:
    store.close()
    return NodeStore.open(db_path)


def committed_group(store: NodeStore, gid: str = "q1", upto: int = 10, term: int = 1, commit: int = 0):
    group = store.create_group(gid, CONF)
    group.append(entries(1, upto + 1, term))
    group.set_hard_state(HardState(term=term, commit=commit))
    store.commit()
    return group


def raw_keys(db_path: Path) -> list[bytes]:
    options = Options(raw_mode=True)
    db = Rdict(str(db_path), options, access_type=AccessType.read_only())
    try:
        return list(db.keys())
    finally:
        db.close()


def stored_entry_indexes(db_path: Path, gid: str) -> list[int]:
    """Indexes of the entries of `gid` on disk (a read-only look, also while the store is open)."""
    group_keys = GroupKeys(gid)
    return [
        group_keys.entry_index(key)
        for key in raw_keys(db_path)
        if group_keys.entry(0) <= key < group_keys.entries_end
    ]


def raw_write(db_path: Path, changes: dict[bytes, bytes | None]) -> None:
    """Change stored values behind the store's back (the store must be closed)."""
    db = Rdict(str(db_path), Options(raw_mode=True))
    try:
        for key, value in changes.items():
            if value is None:
                db.delete(key)
            else:
                db[key] = value
    finally:
        db.close()


def flipped(db_path: Path, key: bytes) -> bytes:
    db = Rdict(str(db_path), Options(raw_mode=True), access_type=AccessType.read_only())
    try:
        value = db[key]
    finally:
        db.close()
    return value[:-1] + bytes([value[-1] ^ 0x5A])


# -- direct I/O -------------------------------------------------------------------------------------------


TMPFS = Path("/dev/shm")


@pytest.mark.skipif(not TMPFS.is_dir(), reason="no tmpfs at /dev/shm")
def test_flushes_work_with_direct_io_on_disk_and_on_tmpfs(tmp_path):
    """Older kernels refuse O_DIRECT on tmpfs (the probe then turns it off); newer ones take it."""
    assert supports_direct_io(tmp_path) is True  # ext4 here, as on the CI machines
    with tempfile.TemporaryDirectory(dir=TMPFS) as directory:
        for path in (tmp_path / "node.db", Path(directory) / "node.db"):
            store = NodeStore.open(path)
            committed_group(store, upto=3)
            store._db.rdict.flush()  # a flush writes with O_DIRECT when the probe allowed it
            store = reopen(store, path)
            assert store.group("q1").entries(1, 4) == entries(1, 4, 1)
            store.close()


# -- groups -------------------------------------------------------------------------------------------


def test_new_group_is_an_empty_log_at_index_zero_with_its_conf(store):
    group = store.create_group("q1", CONF)
    assert (group.first_index(), group.last_index(), group.term(0)) == (1, 0, 0)
    assert group.initial_state() == (HardState(), CONF)
    assert group.snapshot() == Snapshot(SnapshotMeta(conf=CONF))
    assert store.group("q1") is group


def test_creating_an_existing_group_is_refused(store):
    store.create_group("q1", CONF)
    with pytest.raises(ValueError, match="exists"):
        store.create_group("q1", CONF)


def test_group_ids_lists_every_group_sorted_and_survives_reopen(store, db_path):
    for gid in ("b", "a", "ab", "ü-queue"):
        store.create_group(gid, CONF)
    store.commit()
    assert store.group_ids() == ["a", "ab", "b", "ü-queue"]
    store = reopen(store, db_path)
    assert store.group_ids() == ["a", "ab", "b", "ü-queue"]
    store.close()


def test_groups_whose_ids_share_a_prefix_keep_separate_logs(store, db_path):
    committed_group(store, "a", upto=3, term=1)
    committed_group(store, "ab", upto=5, term=2)
    store = reopen(store, db_path)
    assert store.group("a").entries(1, 4) == entries(1, 4, 1)
    assert store.group("ab").entries(1, 6) == entries(1, 6, 2)
    store.close()


def test_drop_group_deletes_every_key_of_the_group(store, db_path):
    committed_group(store, "a", upto=3)
    dropped = committed_group(store, "ab", upto=5, commit=5)
    dropped.app_put(b"body", b"x")
    dropped.create_snapshot(2, CONF, b"state")
    store.commit()
    store.drop_group("ab")
    store.commit()
    assert store.group_ids() == ["a"]
    store.close()
    prefix = GroupKeys("ab").prefix
    remaining = raw_keys(db_path)
    assert not [key for key in remaining if key.startswith(prefix) or key == registry_key("ab")]
    assert any(key.startswith(GroupKeys("a").prefix) for key in remaining)


def test_writes_to_a_dropped_group_are_refused(store):
    group = committed_group(store)
    store.drop_group("q1")
    with pytest.raises(StorageError, match="dropped"):
        group.append(entries(11, 12, 1))
    with pytest.raises(KeyError):
        store.group("q1")


def test_recreating_a_group_dropped_in_the_same_batch_is_refused(store):
    committed_group(store)
    store.drop_group("q1")
    with pytest.raises(ValueError, match="dropped in this batch"):
        store.create_group("q1", CONF)
    store.commit()
    assert store.create_group("q1", CONF).last_index() == 0


# -- append and read ----------------------------------------------------------------------------------


def test_appended_entries_are_readable_before_and_after_commit(store):
    group = store.create_group("q1", CONF)
    group.append(entries(1, 6, 1))
    assert group.entries(1, 6) == entries(1, 6, 1)
    store.commit()
    group.append(entries(6, 9, 2))
    assert group.entries(4, 9) == entries(4, 6, 1) + entries(6, 9, 2)
    assert [group.term(i) for i in range(0, 9)] == [0, 1, 1, 1, 1, 1, 2, 2, 2]
    store.commit()
    assert group.entries(1, 9) == entries(1, 6, 1) + entries(6, 9, 2)


def test_append_replaces_the_conflicting_suffix(store, db_path):
    group = committed_group(store, upto=10, term=1)
    group.append(entries(6, 8, 2))
    assert group.last_index() == 7
    assert group.entries(5, 8) == entries(5, 6, 1) + entries(6, 8, 2)
    store.commit()
    store = reopen(store, db_path)
    group = store.group("q1")
    assert group.last_index() == 7
    assert group.entries(1, 8) == entries(1, 6, 1) + entries(6, 8, 2)
    store.close()


def test_a_staged_suffix_can_be_replaced_again_before_commit(store):
    group = committed_group(store, upto=5, term=1)
    group.append(entries(6, 10, 2))
    group.append(entries(8, 9, 3))
    assert group.entries(1, 9) == entries(1, 6, 1) + entries(6, 8, 2) + entries(8, 9, 3)
    store.commit()
    assert group.entries(1, 9) == entries(1, 6, 1) + entries(6, 8, 2) + entries(8, 9, 3)
    assert group.last_index() == 8


def test_append_leaving_a_gap_or_not_contiguous_is_refused(store):
    group = committed_group(store, upto=3)
    with pytest.raises(ValueError, match="gap"):
        group.append(entries(5, 6, 1))
    with pytest.raises(ValueError, match="contiguous"):
        group.append([Entry(4, 1), Entry(6, 1)])


def test_append_never_rewrites_a_committed_entry_with_another_term(store):
    group = committed_group(store, upto=5)
    group.set_hard_state(HardState(term=1, vote="n1", commit=4))
    with pytest.raises(ValueError, match="committed"):
        group.append(entries(4, 6, 2))
    group.append(entries(4, 5, 1) + entries(5, 6, 2))
    assert group.term(5) == 2


def test_entries_with_max_bytes_return_at_least_one_and_stop_at_the_limit(store):
    group = store.create_group("q1", CONF)
    group.append(entries(1, 11, 1, size=100))
    store.commit()
    assert group.entries(1, 11, max_bytes=10) == entries(1, 2, 1, size=100)
    assert group.entries(1, 11, max_bytes=300) == entries(1, 4, 1, size=100)
    assert group.entries(1, 11, max_bytes=299) == entries(1, 3, 1, size=100)
    assert len(group.entries(1, 11)) == 10


def test_reads_outside_the_log_raise_compacted_or_unavailable(store):
    group = committed_group(store, upto=5)
    with pytest.raises(UnavailableError):
        group.term(6)
    with pytest.raises(UnavailableError):
        group.entries(3, 7)
    with pytest.raises(CompactedError):
        group.entries(0, 2)


def test_hard_state_and_conf_state_survive_reopen(store, db_path):
    group = committed_group(store, upto=4)
    group.set_hard_state(HardState(term=3, vote="n2", commit=4))
    group.set_conf_state(ConfState(voters=("n1", "n2"), learners=("n4",)))
    store.commit()
    store = reopen(store, db_path)
    assert store.group("q1").initial_state() == (
        HardState(term=3, vote="n2", commit=4),
        ConfState(voters=("n1", "n2"), learners=("n4",)),
    )
    store.close()


def test_entry_kind_and_binary_data_round_trip(store, db_path):
    group = store.create_group("q1", CONF)
    stored = [Entry(1, 1, EntryKind.CONF_CHANGE, b"\x00\xff" * 50), Entry(2, 1)]
    group.append(stored)
    store.commit()
    store = reopen(store, db_path)
    assert store.group("q1").entries(1, 3) == stored
    store.close()


# -- snapshots and compaction ---------------------------------------------------------------------


def test_create_snapshot_takes_the_term_from_the_log(store, db_path):
    group = committed_group(store, upto=5, term=1)
    group.append(entries(6, 9, 2))
    group.set_hard_state(HardState(term=2, commit=8))
    snapshot = group.create_snapshot(7, CONF, b"state@7")
    assert snapshot == Snapshot(SnapshotMeta(7, 2, CONF), b"state@7")
    store.commit()
    store = reopen(store, db_path)
    assert store.group("q1").snapshot() == snapshot
    assert store.group("q1").last_index() == 8
    store.close()


def test_create_snapshot_not_newer_or_beyond_the_commit_index_is_refused(store):
    group = committed_group(store, upto=5, commit=4)
    group.create_snapshot(3, CONF, b"s")
    with pytest.raises(SnapshotOutOfDateError):
        group.create_snapshot(3, CONF, b"s")
    with pytest.raises(ValueError, match="beyond the commit index"):
        group.create_snapshot(5, CONF, b"s")


def test_compact_drops_the_prefix_and_the_compaction_point_keeps_its_term(store, db_path):
    group = committed_group(store, upto=5, term=1)
    group.append(entries(6, 11, 2))
    group.set_hard_state(HardState(term=2, commit=7))
    group.create_snapshot(7, CONF, b"s")
    group.compact(6)
    store.commit()
    store = reopen(store, db_path)
    group = store.group("q1")
    assert (group.first_index(), group.last_index(), group.term(6)) == (7, 10, 2)
    with pytest.raises(CompactedError):
        group.term(5)
    with pytest.raises(CompactedError):
        group.entries(6, 8)
    assert group.entries(7, 11) == entries(7, 11, 2)
    store.close()


def test_compact_beyond_the_snapshot_is_refused_and_repeating_it_changes_nothing(store):
    group = committed_group(store, upto=5, commit=5)
    group.create_snapshot(3, CONF, b"s")
    with pytest.raises(ValueError, match="beyond the snapshot"):
        group.compact(4)
    group.compact(3)
    group.compact(2)
    assert (group.first_index(), group.term(3)) == (4, 1)


def test_compact_keeps_the_named_entries_readable_below_the_log_across_reopen(store, db_path):
    group = committed_group(store, upto=10, commit=10)
    group.create_snapshot(8, CONF, b"s")
    group.compact(8, keep=[2, 5, 6, 9])  # 9 is beyond the compaction point: it stays in the log anyway
    store.commit()
    assert stored_entry_indexes(db_path, "q1") == [2, 5, 6, 9, 10]
    store = reopen(store, db_path)
    group = store.group("q1")
    assert (group.first_index(), group.last_index()) == (9, 10)
    with pytest.raises(CompactedError):
        group.entries(5, 6)
    assert [group.kept_entry(i) for i in (2, 5, 6, 9)] == [entries(i, i + 1, 1)[0] for i in (2, 5, 6, 9)]
    store.close()


def test_a_later_compaction_leaves_earlier_kept_entries_alone_until_they_are_dropped(store, db_path):
    group = committed_group(store, upto=10, commit=10)
    group.create_snapshot(4, CONF, b"s")
    group.compact(4, keep=[2])
    group.create_snapshot(8, CONF, b"s")
    group.compact(8, keep=[7])
    store.commit()
    assert stored_entry_indexes(db_path, "q1") == [2, 7, 9, 10]
    group.drop_kept(2)
    store.commit()
    assert stored_entry_indexes(db_path, "q1") == [7, 9, 10]
    with pytest.raises(CorruptionError, match="kept entry missing"):
        group.kept_entry(2)
    with pytest.raises(ValueError, match="not kept"):
        group.drop_kept(9)


def test_a_damaged_kept_entry_is_reported_as_corruption(store, db_path):
    group = committed_group(store, upto=6, commit=6)
    group.create_snapshot(4, CONF, b"s")
    group.compact(4, keep=[3])
    store.commit()
    key = GroupKeys("q1").entry(3)
    store.close()
    raw_write(db_path, {key: flipped(db_path, key)})
    store = NodeStore.open(db_path)  # opening checks the log, not what is kept below it
    with pytest.raises(CorruptionError, match="index 3"):
        store.group("q1").kept_entry(3)
    store.close()


def test_append_of_entries_below_the_compaction_point_keeps_only_the_new_ones(store):
    group = committed_group(store, upto=5, commit=4)
    group.create_snapshot(4, CONF, b"s")
    group.compact(4)
    group.append(entries(3, 8, 1))
    assert (group.first_index(), group.last_index()) == (5, 7)
    assert group.entries(5, 8) == entries(5, 8, 1)


def test_apply_snapshot_replaces_the_whole_log(store, db_path):
    group = committed_group(store, upto=10, term=1)
    received = Snapshot(SnapshotMeta(20, 4, ConfState(voters=("n1", "n5"))), b"leader state")
    group.apply_snapshot(received)
    assert (group.first_index(), group.last_index(), group.term(20)) == (21, 20, 4)
    group.append(entries(21, 23, 4))
    store.commit()
    store = reopen(store, db_path)
    group = store.group("q1")
    assert group.snapshot() == received
    assert group.initial_state()[1] == received.meta.conf
    assert (group.first_index(), group.last_index()) == (21, 22)
    assert group.entries(21, 23) == entries(21, 23, 4)
    assert stored_entry_indexes(db_path, "q1") == [21, 22]
    store.close()


def test_apply_snapshot_older_than_the_current_one_is_refused(store):
    group = committed_group(store, upto=5, commit=5)
    group.create_snapshot(5, CONF, b"s")
    with pytest.raises(SnapshotOutOfDateError):
        group.apply_snapshot(Snapshot(SnapshotMeta(5, 1, CONF), b"old"))


# -- application key space ------------------------------------------------------------------------


def test_app_keys_are_staged_readable_and_ordered(store, db_path):
    group = store.create_group("q1", CONF)
    group.app_put(b"m:2", b"two")
    group.app_put(b"m:1", b"one")
    store.commit()
    group.app_put(b"m:3", b"three")
    group.app_delete(b"m:1")
    group.app_put(b"n:1", b"other")
    assert group.app_get(b"m:1") is None
    assert group.app_get(b"m:3") == b"three"
    assert list(group.app_items(b"m:")) == [(b"m:2", b"two"), (b"m:3", b"three")]
    store.commit()
    store = reopen(store, db_path)
    group = store.group("q1")
    assert list(group.app_items()) == [(b"m:2", b"two"), (b"m:3", b"three"), (b"n:1", b"other")]
    store.close()


def test_app_keys_of_one_group_are_invisible_to_another(store):
    first = store.create_group("a", CONF)
    second = store.create_group("ab", CONF)
    first.app_put(b"\xff\xff", b"edge")
    store.commit()
    assert list(first.app_items(b"\xff")) == [(b"\xff\xff", b"edge")]
    assert second.app_get(b"\xff\xff") is None
    assert list(second.app_items()) == []


# -- group commit ---------------------------------------------------------------------------------


def test_staged_changes_of_many_groups_are_written_by_one_synced_commit(store, db_path):
    groups = [store.create_group(f"q{i}", CONF) for i in range(50)]
    store.commit()
    writes_before, syncs_before = store.wal_stats()
    for group in groups:
        group.append(entries(1, 4, 1))
        group.set_hard_state(HardState(term=1, vote="n1", commit=2))
        group.app_put(b"body", b"x")
    assert store.wal_stats() == (writes_before, syncs_before)
    assert stored_entry_indexes(db_path, "q0") == []
    store.commit()
    assert store.wal_stats() == (writes_before + 1, syncs_before + 1)
    assert stored_entry_indexes(db_path, "q7") == [1, 2, 3]
    store = reopen(store, db_path)
    assert all(store.group(f"q{i}").entries(1, 4) == entries(1, 4, 1) for i in range(50))
    store.close()


def test_uncommitted_changes_are_lost_on_close(store, db_path):
    group = committed_group(store, upto=3)
    group.append(entries(4, 6, 1))
    group.set_hard_state(HardState(term=9))
    store = reopen(store, db_path)
    assert store.group("q1").last_index() == 3
    assert store.group("q1").initial_state()[0] == HardState(term=1)
    store.close()


def test_reopen_keeps_every_group_state_snapshot_and_entry(store, db_path):
    group = committed_group(store, upto=20, term=2)
    group.set_hard_state(HardState(term=2, vote="n3", commit=15))
    group.create_snapshot(12, CONF, b"snap")
    group.compact(10)
    store.commit()
    before = (
        group.initial_state(),
        group.first_index(),
        group.last_index(),
        group.snapshot(),
        group.term(10),
    )
    store = reopen(store, db_path)
    group = store.group("q1")
    after = (group.initial_state(), group.first_index(), group.last_index(), group.snapshot(), group.term(10))
    assert after == before
    assert group.entries(11, 21) == entries(11, 21, 2)
    store.close()


# -- the write-ahead log at open (issue 17, finding 6) ------------------------------------------------

WAL_WRITER = """
import os, sys
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState, Entry
store = NodeStore.open(sys.argv[1])
group = store.create_group("q1", ConfState(voters=("n1",)))
for index in range(1, 21):
    group.append([Entry(index=index, term=1, data=b"x" * 100)])
    store.commit(sync=True)
os._exit(0)  # a crash: nothing flushed, every batch is only in the synced write-ahead log
"""


def crash_after_synced_writes(db_path: Path) -> Path:
    """Write 20 synced batches in a child process that dies without closing; the WAL file left behind."""
    subprocess.run([sys.executable, "-c", WAL_WRITER, str(db_path)], check=True)
    (wal,) = db_path.glob("*.log")
    return wal


def test_rule_a_damaged_synced_wal_record_fails_the_open_loudly(db_path):
    wal = crash_after_synced_writes(db_path)
    data = bytearray(wal.read_bytes())
    data[len(data) // 2] ^= 0x5A  # later synced records follow: point-in-time recovery dropped them silently
    wal.write_bytes(bytes(data))
    with pytest.raises(DatabaseCorruptionError, match="Corruption"):
        NodeStore.open(db_path)


def test_a_torn_last_wal_record_is_a_write_that_never_finished_and_the_store_opens(db_path):
    wal = crash_after_synced_writes(db_path)
    os.truncate(wal, wal.stat().st_size - 50)
    store = NodeStore.open(db_path)
    assert store.group("q1").last_index() == 19
    assert store.group("q1").repair() is None
    store.close()


# -- damage: a group opens repairing, nothing is dropped (issue 17, finding 6) -----------------------


def test_rule_a_damaged_entry_in_the_middle_opens_repairing_naming_it(store, db_path, caplog):
    committed_group(store, upto=10)
    store.close()
    key = GroupKeys("q1").entry(5)
    raw_write(db_path, {key: flipped(db_path, key)})
    store = NodeStore.open(db_path)
    group = store.group("q1")
    assert group.repair() == Repair("entry damaged", 5, 10)
    assert group.last_index() == 4
    assert stored_entry_indexes(db_path, "q1") == list(range(1, 11))
    assert "group 'q1': entry damaged at index 5" in caplog.text
    store.close()


def test_rule_a_damaged_entry_is_never_dropped_silently(store, db_path):
    committed_group(store, upto=10)
    store.close()
    group_keys = GroupKeys("q1")
    raw_write(db_path, {group_keys.entry(i): flipped(db_path, group_keys.entry(i)) for i in (9, 10)})
    store = NodeStore.open(db_path)
    assert store.group("q1").repair() == Repair("entry damaged", 9, 10)
    assert store.group("q1").last_index() == 8
    assert store.group("q1").entries(1, 9) == entries(1, 9, 1)
    store = reopen(store, db_path)
    assert store.group("q1").repair() == Repair("entry damaged", 9, 10)
    assert stored_entry_indexes(db_path, "q1") == list(range(1, 11))
    store.close()


def test_rule_entries_after_a_gap_at_the_end_open_repairing(store, db_path):
    committed_group(store, upto=10)
    store.close()
    raw_write(db_path, {GroupKeys("q1").entry(8): None})
    store = NodeStore.open(db_path)
    assert store.group("q1").last_index() == 7
    assert store.group("q1").repair() == Repair("entry missing", 8, 10)
    store.close()


def test_rule_a_commit_index_beyond_the_last_valid_entry_opens_repairing_through_it(store, db_path):
    group = committed_group(store, upto=10)
    group.set_hard_state(HardState(term=1, commit=10))
    store.commit()
    store.close()
    group_keys = GroupKeys("q1")
    raw_write(db_path, {group_keys.entry(10): None})
    store = NodeStore.open(db_path)
    group = store.group("q1")
    assert group.repair() == Repair("commit index beyond the last valid entry", 10, 10, conf_through=10)
    assert group.initial_state()[0] == HardState(term=1, commit=9)
    store.close()


def test_rule_an_unreadable_hard_state_opens_repairing_without_a_vote_in_the_highest_term_found(
    store, db_path
):
    group = committed_group(store, upto=4, term=3)
    group.set_hard_state(HardState(term=5, vote="n2", commit=4))
    store.commit()
    store.close()
    key = GroupKeys("q1").hard_state
    raw_write(db_path, {key: flipped(db_path, key)})
    store = NodeStore.open(db_path)
    group = store.group("q1")
    assert group.repair() is not None and group.repair().through == 4
    assert "record H" in group.repair().reason
    assert group.initial_state()[0] == HardState(term=3, vote=UNKNOWN_VOTE, commit=0)
    store = reopen(store, db_path)
    assert store.group("q1").initial_state()[0] == HardState(term=3, vote=UNKNOWN_VOTE, commit=0)
    store.close()


def test_rule_a_lost_hard_state_keeps_the_snapshot_committed(store, db_path):
    group = committed_group(store, upto=10, commit=10)
    group.create_snapshot(6, CONF, b"state at 6")
    store.commit()
    store.close()
    raw_write(db_path, {GroupKeys("q1").hard_state: None})
    store = NodeStore.open(db_path)
    group = store.group("q1")
    assert group.repair() == Repair("record H: missing", None, 10, conf_through=10)
    assert group.initial_state()[0] == HardState(term=1, vote=UNKNOWN_VOTE, commit=6)
    store.close()


def test_rule_repair_survives_restarts_until_finished_and_entries_from_the_leader_replace_the_damage(
    store, db_path
):
    committed_group(store, upto=10, commit=6)
    store.close()
    group_keys = GroupKeys("q1")
    raw_write(db_path, {group_keys.entry(8): flipped(db_path, group_keys.entry(8))})
    store = NodeStore.open(db_path)
    group = store.group("q1")
    group.append(entries(8, 10, 2))  # the leader's log ends at 9: stale entry 10 goes with the damage
    store.commit()
    store = reopen(store, db_path)
    group = store.group("q1")
    assert group.repair() == Repair("entry damaged", 8, 10, conf_through=6)
    assert (group.last_index(), stored_entry_indexes(db_path, "q1")) == (9, list(range(1, 10)))
    group.finish_repair()
    store.commit()
    store = reopen(store, db_path)
    assert store.group("q1").repair() is None
    assert store.group("q1").entries(8, 10) == entries(8, 10, 2)
    store.close()


def test_a_repair_marker_written_before_conf_through_decodes_with_none_applied(store, db_path):
    committed_group(store, upto=10)
    store.close()
    marker = GroupKeys("q1").repair
    raw_write(db_path, {marker: records.seal(marker, msgpack.packb(["entry damaged", 8, 10]))})
    store = NodeStore.open(db_path)
    assert store.group("q1").repair() == Repair("entry damaged", 8, 10, conf_through=0)
    store.close()


def test_a_value_copied_under_another_index_fails_its_checksum(store, db_path):
    committed_group(store, upto=10)
    store.close()
    group_keys = GroupKeys("q1")
    copied = Rdict(str(db_path), Options(raw_mode=True), access_type=AccessType.read_only())
    value = copied[group_keys.entry(4)]
    copied.close()
    raw_write(db_path, {group_keys.entry(3): value})
    store = NodeStore.open(db_path)
    assert store.group("q1").repair() == Repair("entry damaged", 3, 10)
    store.close()


def test_corruption_found_by_a_read_names_group_and_index(store, db_path):
    committed_group(store, upto=10)
    store = reopen(store, db_path)
    group = store.group("q1")
    key = GroupKeys("q1").entry(4)
    store._db.rdict[key] = b"garbage"
    with pytest.raises(CorruptionError, match="'q1' index 4"):
        group.entries(1, 11)
    store.close()


def _budgeted_store(db_path: Path, monkeypatch: pytest.MonkeyPatch, *, total: int, least: int) -> NodeStore:
    """A store whose groups share `total` bytes of recent entries, at least `least` each."""
    monkeypatch.setattr(storage_module, "RECENT_ENTRY_BYTES", total)
    monkeypatch.setattr(storage_module, "MIN_RECENT_ENTRY_BYTES", least)
    return NodeStore.open(db_path)


def test_the_newest_written_entries_are_read_from_memory_older_ones_from_the_database(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _budgeted_store(db_path, monkeypatch, total=4096, least=4096)
    group = store.create_group("g", CONF)
    big = 4096 // 4 + 1  # four of them do not fit in the group's share
    written = entries(1, 7, term=1, size=big)
    group.append(written)
    store.commit()
    damaged = {1, 6}
    for index in damaged:  # the database copies go bad behind the store's back
        store._db.rdict[GroupKeys("g").entry(index)] = b"garbage"
    assert group.entries(4, 7) == written[3:]  # entry 6 (damaged in the database) comes from memory
    with pytest.raises(CorruptionError):
        group.entries(1, 2)  # too old to be kept: the database
    group.append(entries(5, 6, term=2, size=big))  # a new leader replaces entries 5 and 6
    store.commit()
    assert group.entries(4, 6) == [written[3], *entries(5, 6, term=2, size=big)]
    store.close()


def test_a_write_trims_the_groups_that_appended_and_every_group_once_their_shares_shrink(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _budgeted_store(db_path, monkeypatch, total=8192, least=1024)
    busy, idle = store.create_group("busy", CONF), store.create_group("idle", CONF)
    for gid in ("g3", "g4"):
        store.create_group(gid, CONF)
    size = 1900 // 2 - storage_module.ENTRY_OVERHEAD_BYTES
    idle.append(entries(1, 3, term=1, size=size))
    store.commit()
    assert idle._recent_bytes == 1900  # within its share of four groups (2048)
    store.create_group("g5", CONF)
    busy.append(entries(1, 2, term=1, size=10))
    store.commit()
    assert idle._recent_bytes == 1900  # over a share of five (1638), but shares shrank by less than a quarter
    for gid in ("g6", "g7"):
        store.create_group(gid, CONF)
    busy.append(entries(2, 3, term=1, size=10))
    store.commit()
    assert idle._recent_bytes <= 8192 // 7  # they shrank by more: every group is trimmed
    idle.append(entries(3, 5, term=1, size=size))
    store.commit()
    assert idle._recent_bytes <= 8192 // 7  # a group that appended is trimmed
    store.close()


@pytest.mark.parametrize("size", [0, 1, 255, 256, 65535, 65536, 1 << 20])
def test_an_entry_record_is_the_sealed_msgpack_of_its_fields(size: int) -> None:
    key = GroupKeys("g").entry(7)
    entry = Entry(index=7, term=2**40, kind=EntryKind.CONF_CHANGE, data=bytes(i % 253 for i in range(size)))
    value = records.encode_entry(key, entry)
    assert value == records.seal(key, msgpack.packb([entry.term, int(entry.kind), entry.data]))
    assert records.decode_entry(key, 7, value) == entry
