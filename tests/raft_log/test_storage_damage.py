"""Damage in RocksDB's own files (decision 0011): found at open, by the read or write that meets it, or
by the read of the whole store after open (decision 0016), never a silently shorter read, and heard by
`NodeStore.on_damage` once the store is running."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_storage import CONF, entries, flipped, raw_write

from raft_log.storage import keys
from raft_log.storage.database import DatabaseCorruptionError
from raft_log.storage.keys import GroupKeys
from raft_log.storage.node_store import CorruptionError, NodeStore
from raft_log.storage.rocksdb_database import RocksDatabase
from raft_log.types import Entry, HardState, StorageError


def flip_byte(path: Path, offset: int) -> None:
    """Flip one byte of a file in place, synced."""
    with path.open("r+b") as file:
        file.seek(offset)
        byte = file.read(1)
        file.seek(offset)
        file.write(bytes([byte[0] ^ 0x01]))
        file.flush()
        os.fsync(file.fileno())


def flushed_store(db_path: Path, batches: int) -> NodeStore:
    """A store whose group `q1` holds `batches` flushed table files of 100 entries each."""
    store = NodeStore.open(db_path)
    group = store.create_group("q1", CONF)
    for batch in range(batches):
        group.append(entries(batch * 100 + 1, batch * 100 + 101, 1, size=200))
        store.commit()
        assert isinstance(store._db, RocksDatabase)
        store._db.rdict.flush(True)
    return store


def test_damaged_table_file_is_found_at_open_instead_of_a_scan_stopping_short(tmp_path: Path) -> None:
    db_path = tmp_path / "node.db"
    flushed_store(db_path, 2).close()
    table = min(db_path.glob("*.sst"))
    flip_byte(table, 100)  # a data block: a scan used to end there silently, as if the log were shorter
    with pytest.raises(DatabaseCorruptionError, match="Corruption"):
        NodeStore.open(db_path)


def test_damage_met_by_a_write_at_runtime_is_heard_before_it_is_raised(tmp_path: Path) -> None:
    db_path = tmp_path / "node.db"
    store = flushed_store(db_path, 2)
    heard: list[StorageError] = []
    store.on_damage = heard.append
    flip_byte(min(db_path.glob("*.sst")), 100)
    assert isinstance(store._db, RocksDatabase)
    store._db.rdict.compact_range(None, None)  # the compaction meets the damage: a background error
    group = store.group("q1")
    group.append([Entry(index=201, term=1, data=b"x")])
    with pytest.raises(DatabaseCorruptionError):
        store.commit()
    assert heard and isinstance(heard[0], DatabaseCorruptionError), heard


def test_a_damaged_record_read_at_runtime_is_heard_before_it_is_raised(tmp_path: Path) -> None:
    db_path = tmp_path / "node.db"
    store = NodeStore.open(db_path)
    group = store.create_group("q1", CONF)
    group.append(entries(1, 7, 1))
    group.set_hard_state(HardState(term=1, commit=6))
    group.create_snapshot(4, CONF, b"s")
    group.compact(4, keep=[3])
    store.commit()
    store.close()
    key = GroupKeys("q1").entry(3)
    raw_write(db_path, {key: flipped(db_path, key)})
    store = NodeStore.open(db_path)  # what is kept below the log is read only when needed
    heard: list[StorageError] = []
    store.on_damage = heard.append
    with pytest.raises(CorruptionError, match="index 3"):
        store.group("q1").kept_entry(3)
    assert [type(e) for e in heard] == [CorruptionError]
    store.close()


def test_damaged_blob_file_is_found_by_reading_the_store_through(tmp_path: Path) -> None:
    """Values of 4 KiB and more live in blob files, which recovery need not read: the store opens, and the
    read of the whole store after it (decision 0016) meets the flipped byte and reports it."""
    db_path = tmp_path / "node.db"
    store = NodeStore.open(db_path)
    group = store.create_group("q1", CONF)
    group.app_put(b"b1", os.urandom(64 * 1024))
    store.commit()
    assert isinstance(store._db, RocksDatabase)
    store._db.rdict.flush(True)
    store.close()
    blob = max(db_path.glob("*.blob"), key=lambda path: path.stat().st_size)
    flip_byte(blob, blob.stat().st_size // 2)  # inside the value
    store = NodeStore.open(db_path)
    heard: list[StorageError] = []
    store.on_damage = heard.append
    with pytest.raises(DatabaseCorruptionError, match="Corruption"):
        store.read_through(None, 1 << 30)
    assert [type(e) for e in heard] == [DatabaseCorruptionError]
    store.close()


def test_reading_the_store_through_in_steps_reads_every_key_once(tmp_path: Path) -> None:
    store = flushed_store(tmp_path / "node.db", 3)
    lo, hi = keys.every_key_range()
    everything = list(store._scan(lo, hi))
    last_keys: list[bytes] = []
    total = 0
    after: bytes | None = None
    while True:
        after, read = store.read_through(after, 1000)  # a few entries per step
        total += read
        if after is None:
            break
        last_keys.append(after)
    assert len(last_keys) > 10 and last_keys == sorted(set(last_keys))
    # resuming after the last key read skips nothing and reads nothing twice
    assert total == sum(len(key) + len(value) for key, value in everything)
    store.close()
