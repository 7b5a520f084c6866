"""The `Database` of a node in production: RocksDB through rocksdict, tuned for a Raft log."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rocksdict import DBCompressionType, DBRecoveryMode, Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from . import database
from .database import DatabaseCorruptionError

COMPACTION_NICENESS = 19
BLOB_MIN_BYTES = 4096
"""Values at least this large are kept in RocksDB blob files rather than in the SST files."""


def _options(direct_io: bool) -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_compression_type(DBCompressionType.none())
    # A crash can tear only the last WAL record (a write whose fsync never returned, so never acknowledged):
    # it is dropped. A damaged record with records after it is damage to synced, possibly acknowledged
    # writes: the open fails (point_in_time stopped there silently, dropping every later synced write;
    # absolute_consistency also refuses the torn tail every power loss can leave).
    # See docs/internals/storage.md.
    options.set_wal_recovery_mode(DBRecoveryMode.tolerate_corrupted_tail_records())
    options.set_paranoid_checks(True)
    options.set_max_background_jobs(2)
    # Large values (batched log entries, big bodies) go to blob files, so compactions move references
    # instead of rewriting the data: +15 % on 16 KiB publishes (docs/history/performance-log.md).
    options.set_enable_blob_files(True)
    options.set_min_blob_size(BLOB_MIN_BYTES)
    options.set_enable_blob_gc(True)
    # Flushes and compactions write with O_DIRECT where the file system allows it: the data is in the
    # WAL and the memtable already, and copying it through the page cache again cost a tenth of all
    # CPU on 16 KiB publishes (docs/history/performance-log.md). Reads stay buffered.
    options.set_use_direct_io_for_flush_and_compaction(direct_io)
    return options


def supports_direct_io(directory: Path) -> bool:
    """Whether files in `directory` can be opened with O_DIRECT (some file systems refuse it, as tmpfs did
    before Linux 6.6)."""
    if not hasattr(os, "O_DIRECT"):
        return False
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / ".direct-io-probe"
    try:
        descriptor = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
    except OSError:
        return False
    os.close(descriptor)
    probe.unlink(missing_ok=True)
    return True


def _lower_compaction_priority() -> None:
    """Give RocksDB's compaction threads the lowest CPU priority (Linux, best effort).

    Compactions catch up later at no cost to durability; on a busy machine they should not take CPU
    from the event loop, which would show as latency. (RocksDB's own LowerThreadPoolCPUPriority is not
    exposed by rocksdict.)"""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                if comm.read().strip() == "rocksdb:low":
                    os.setpriority(os.PRIO_PROCESS, int(task), COMPACTION_NICENESS)
        except OSError:
            continue


@contextmanager
def _corruption_raised() -> Iterator[None]:
    """RocksDB's `Corruption` status (rocksdict raises a plain Exception naming it) as
    `DatabaseCorruptionError`; other errors pass unchanged."""
    try:
        yield
    except DatabaseCorruptionError:
        raise
    except Exception as exc:
        if str(exc).startswith("Corruption"):
            raise DatabaseCorruptionError(str(exc)) from exc
        raise


class RocksDatabase:
    """One RocksDB database (`rdict`); opening it replays its write-ahead log, dropping only a torn last
    record: any other damage raises `DatabaseCorruptionError`, at open or at the read or write that meets
    it (every read verifies checksums; the node reads every file once while serving, `StoreCheck`)."""

    def __init__(self, rdict: Rdict) -> None:
        """Use `RocksDatabase.open`."""
        self.rdict = rdict
        self._wal_syncs = 0  # RocksDB's own count leaves out the syncs of `flush_wal`

    @classmethod
    def open(cls, path: str | Path) -> RocksDatabase:
        """Open (or create) the database at `path`.

        What the write-ahead log held without an fsync (a process crash leaves it in the operating
        system's cache, and recovery reads it back) is made durable here, before the node can acknowledge
        any of it: RocksDB flushes recovered writes to synced table files when it opens, and the flush
        below keeps that true whatever its defaults become.

        Damage to the WAL or the MANIFEST fails here; a table or blob file is read by what reaches it
        (decision 0016: the whole database is read once after the node serves)."""
        with _corruption_raised():
            rdict = Rdict(str(path), _options(direct_io=supports_direct_io(Path(path))))
        database = cls(rdict)
        try:
            with _corruption_raised():
                rdict.flush(True)
        except BaseException:
            rdict.close()
            raise
        _lower_compaction_priority()
        return database

    def new_batch(self) -> WriteBatch:
        return WriteBatch(raw_mode=True)

    def write(self, batch: database.WriteBatch, sync: bool) -> None:
        """Write `batch`; with `sync`, return once it is durable.

        rocksdict holds the GIL through `write` and releases it through `flush_wal`, so a synced write
        is an unsynced one, then a sync of the write-ahead log (RocksDB's SyncWAL: every WAL file
        written to, and its directory when new): a thread writing it lets the event loop run for the
        length of the fsync. The one difference from a synced `write`, that RocksDB's own reads see the
        batch before the sync ends, is none for the node, whose reads see a staged batch before it is
        written at all (docs/internals/storage.md, "Group commit")."""
        if not isinstance(batch, WriteBatch):
            raise TypeError("a RocksDatabase writes only batches of its own `new_batch`")
        options = WriteOptions()
        options.sync = False
        with _corruption_raised():
            self.rdict.write(batch, options)
            if sync:
                self.rdict.flush_wal(True)
                self._wal_syncs += 1

    def get(self, key: bytes) -> bytes | None:
        with _corruption_raised():
            return self.rdict.get(key)

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Keys and values in `[lo, hi)`. An iterator that meets an error just stops being valid: its
        status says whether it reached the end or damage."""
        read_options = ReadOptions()
        read_options.set_iterate_upper_bound(hi)
        with _corruption_raised():
            cursor = self.rdict.iter(read_options)
            cursor.seek(lo)
            while cursor.valid():
                item = cursor.key(), cursor.value()
                yield item
                cursor.next()
            cursor.status()

    def wal_stats(self) -> tuple[int, int]:
        stats = self.rdict.property_value("rocksdb.dbstats") or ""
        found = re.search(r"Cumulative WAL: (\d+) writes, (\d+) syncs", stats)
        writes, synced_writes = (int(found[1]), int(found[2])) if found else (0, 0)
        return writes, synced_writes + self._wal_syncs

    def close(self) -> None:
        self.rdict.close()
