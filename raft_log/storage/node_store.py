"""Durable Raft log storage: one RocksDB database per node, one `GroupLog` per Raft group.

Every write of every group is staged into the node's single pending write batch; `NodeStore.commit()`
writes it with one write and one fsync (group commit). Reads see staged changes at once, and nothing
staged is durable, or may be acknowledged, before `commit()` returns. One event loop drives a store;
the only work it may hand to another thread is `write_taken`, so a synced write need not block the loop
(`take` / `write_taken` / `finish`). Writes reach the database in the order their batches were taken.
See docs/internals/storage.md for key layout and recovery rules.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from ..types import (
    UNKNOWN_VOTE,
    CompactedError,
    ConfState,
    Entry,
    GroupId,
    HardState,
    Repair,
    Snapshot,
    SnapshotMeta,
    StorageError,
    UnavailableError,
)
from . import keys, records
from .database import Database, DatabaseCorruptionError, WriteBatch, out_of_space
from .rocksdb_database import RocksDatabase

log = logging.getLogger(__name__)

TERM_CACHE_SIZE = 4096
"""How many terms of the newest entries each group keeps in memory."""

RECENT_ENTRY_BYTES = 64 * 1024 * 1024
"""How much data of their newest written entries a node's groups keep in memory, shared evenly (at least
MIN_RECENT_ENTRY_BYTES each), so applying them (the next round) and sending them to a follower that is
just behind read no RocksDB."""
MIN_RECENT_ENTRY_BYTES = 1024 * 1024
ENTRY_OVERHEAD_BYTES = 200  # an Entry object and its place in a list, roughly

T = TypeVar("T")


class CorruptionError(StorageError):
    """Stored data of a group is damaged in a way that cannot be a torn, unacknowledged write."""

    def __init__(self, group: GroupId, index: int | None, reason: str) -> None:
        self.group = group
        self.index = index
        self.reason = reason
        where = f"index {index}" if index is not None else "metadata"
        super().__init__(f"group {group!r} {where}: {reason}")


class SnapshotOutOfDateError(StorageError, ValueError):
    """A snapshot at or below the index of the snapshot already held."""


def _entry_cost(entry: Entry) -> int:
    """What keeping an entry in memory costs against the recent-entries budget (data plus the object)."""
    return len(entry.data) + ENTRY_OVERHEAD_BYTES


def _splice(base: int, items: list[T], at: int, new: list[T]) -> tuple[int, list[T]]:
    """A run of values starting at index `base` with `new` written from index `at` on (later ones dropped)."""
    if base <= at <= base + len(items):
        return base, items[: at - base] + new
    return at, list(new)


@dataclass(frozen=True, slots=True)
class TakenBatch:
    """Staged writes taken for writing (possibly from a worker thread); `ticket` orders the writes."""

    batch: WriteBatch
    ticket: int


def random_incarnation() -> str:
    """A new node incarnation: 128 random bits, as 32 hex digits."""
    return uuid.uuid4().hex


class NodeStore:
    """A node's database: every group's log, state, snapshot and application keys, with group commit.

    `incarnation` identifies this database: created with it (written synced before anything else is
    acknowledged) and never changed, so a wiped or replaced database is a new incarnation.

    `on_damage`, once set (after recovery), hears of damage met at runtime before it is raised: a
    `DatabaseCorruptionError` of a read or a write, or a `CorruptionError` of a record read back.
    """

    def __init__(self, db: Database) -> None:
        """Use `NodeStore.open` or `NodeStore.recover`."""
        self._db = db
        self._batch = db.new_batch()
        self._staged: dict[bytes, bytes | None] = {}
        self._groups: dict[GroupId, GroupLog] = {}
        self._appended: set[GroupLog] = set()  # groups that appended entries since the last trim
        self._trimmed_all_at: int | None = None  # the per-group budget of the last trim of every group
        self._failed: BaseException | None = None
        self._closed = False
        self._taken = 0  # tickets handed out by take()
        self._written = 0  # tickets whose batch is in the database (or failed)
        self._turn = threading.Condition()
        self.incarnation = ""
        self.created = False  # opening created the database: it held no incarnation and no group
        self.records_drops = False  # every drop here of a group id that may come back left a tombstone
        self.on_damage: Callable[[StorageError], None] | None = None

    @classmethod
    def open(cls, path: str | Path) -> NodeStore:
        """Open (or create) the RocksDB database at `path` and `recover` it."""
        return cls.recover(RocksDatabase.open(path))

    @classmethod
    def recover(cls, db: Database, new_incarnation: Callable[[], str] = random_incarnation) -> NodeStore:
        """A store over `db` after verifying every group; a damaged group opens repairing (`GroupLog.repair`).

        A database without an incarnation (new, or written before incarnations existed) gets one from
        `new_incarnation`, as does one whose record is damaged (the node is then treated as new).
        Raises `CorruptionError` when a group's membership, log start or snapshot metadata is damaged, and
        `DatabaseCorruptionError` when the database met damage in its own files.
        """
        store = cls(db)
        try:
            lo, hi = keys.registry_range()
            for key, _ in store._scan(lo, hi):
                gid = keys.group_id_of(key)
                store._groups[gid] = GroupLog._recover(store, gid)
            store.incarnation = store._recover_incarnation(new_incarnation)
            store.records_drops = store.created or store._get(keys.RECORDS_DROPS) is not None
            if store.created:
                store._put(keys.RECORDS_DROPS, b"")
            store.commit()
        except BaseException:
            store.close()
            raise
        return store

    def _recover_incarnation(self, new_incarnation: Callable[[], str]) -> str:
        """The stored incarnation, or a new one staged (the caller commits it synced)."""
        key = keys.NODE_INCARNATION
        value = self._db.get(key)
        if value is not None:
            try:
                return records.decode_incarnation(key, value)
            except records.BadRecord as exc:
                log.warning("node incarnation record is damaged (%s): starting as a new incarnation", exc)
        incarnation = new_incarnation()
        self.created = value is None and not self._groups
        self._put(key, records.encode_incarnation(key, incarnation))
        return incarnation

    def close(self) -> None:
        """Close the database (again: no effect) once taken batches are written; staged ones are discarded."""
        if self._closed:
            return
        with self._turn:
            self._turn.wait_for(lambda: self._written == self._taken)
        self._closed = True
        self._batch = self._db.new_batch()
        self._staged.clear()
        try:
            self._db.close()
        except Exception as exc:  # the database refuses to flush once a write failed; it is closed
            if self._failed is None:
                raise
            log.warning("the database closed after a failed write: %s", exc)

    def group_ids(self) -> list[GroupId]:
        """The ids of every group, sorted."""
        return sorted(self._groups)

    def has_group(self, gid: GroupId) -> bool:
        """Whether group `gid` has a log here."""
        return gid in self._groups

    def group(self, gid: GroupId) -> GroupLog:
        """The log of group `gid` (the same object on every call); raises `KeyError` if unknown."""
        return self._groups[gid]

    def create_group(self, gid: GroupId, conf: ConfState) -> GroupLog:
        """Stage a new group: an empty log at index 0 with membership `conf`."""
        if gid in self._groups:
            raise ValueError(f"group {gid!r} already exists")
        if self._staged.get(keys.registry_key(gid), b"") is None:
            raise ValueError(f"group {gid!r} was dropped in this batch: commit before creating it again")
        group_keys = keys.GroupKeys(gid)
        self._put(keys.registry_key(gid), b"")
        group = GroupLog(self, gid, group_keys, conf)
        group.set_hard_state(HardState())
        group.set_conf_state(conf)
        group._stage_log_start(0, 0)
        group._stage_snapshot(Snapshot(meta=SnapshotMeta(conf=conf)))
        self._groups[gid] = group
        return group

    def drop_group(self, gid: GroupId, *, tombstone: bool = True) -> None:
        """Stage the deletion of every key of group `gid`, leaving a tombstone (`never_held`) unless the
        caller knows the id is never used again (a deleted queue's); its `GroupLog` refuses further
        writes."""
        group = self._groups.pop(gid)
        self._appended.discard(group)
        group._dropped = True
        self._delete(keys.registry_key(gid))
        if tombstone:
            self._put(keys.dropped_key(gid), b"")
        self._delete_range(group._keys.prefix, group._keys.end)
        for key in [key for key in self._staged if group._keys.prefix <= key < group._keys.end]:
            self._staged[key] = None

    def never_held(self, gid: GroupId) -> bool:
        """Whether this database never held group `gid`, as far as it can tell: it holds none now, it left
        no tombstone for it (one is left for every drop whose id may be used again), and it was created
        by a version that leaves them (older ones cannot tell: False)."""
        return self.records_drops and gid not in self._groups and self._get(keys.dropped_key(gid)) is None

    def commit(self, sync: bool = True) -> None:
        """Write everything staged by every group with one write (and one fsync when `sync`)."""
        taken = self.take()
        if taken is not None:
            self.write_taken(taken, sync)
            self.finish(taken)

    def take(self) -> TakenBatch | None:
        """Take everything staged so far for `write_taken`; None when nothing is staged.

        Reads keep seeing the taken changes (they are not in the database yet) until `finish`.
        """
        self._check_usable()
        if self._batch.is_empty():
            return None
        self._taken += 1
        taken, self._batch = TakenBatch(self._batch, self._taken), self._db.new_batch()
        return taken

    def write_taken(self, taken: TakenBatch, sync: bool) -> None:
        """Write a taken batch after every batch taken before it; safe to call from a worker thread.

        A failure leaves the store unusable: the in-memory view already shows the staged changes,
        so only a reopen is truthful.
        """
        with self._turn:
            self._turn.wait_for(lambda: self._written == taken.ticket - 1)
            try:
                self._check_usable()
                self._db.write(taken.batch, sync)
            except DatabaseCorruptionError as exc:
                self._failed = self._failed or exc
                self._damaged(exc)
                raise
            except BaseException as exc:
                self._failed = self._failed or exc
                raise
            finally:
                self._written = taken.ticket
                self._turn.notify_all()

    @property
    def failed(self) -> bool:
        """Whether a write failed: the store takes nothing more (`write_taken`)."""
        return self._failed is not None

    @property
    def full_disk(self) -> BaseException | None:
        """The error of the first failed write when the disk refused it for want of space (`out_of_space`):
        the store is unusable (`write_taken`), and a reopen shows what was written. Any other failed
        write is not one a node can wait out (an I/O error may have left the batch half there)."""
        failure = self._failed
        return failure if failure is not None and out_of_space(failure) else None

    def finish(self, taken: TakenBatch) -> None:
        """After `write_taken`, on the store's loop: drop the in-memory view of what is now written, and
        trim the recent entries of the groups that appended since (of every group once each one's share
        of the budget shrank by a quarter: groups were added; an idle group keeps at most the share it
        was last trimmed to, so all of them together hold at most about twice the budget).

        The view is kept when more was staged or taken since, so reads still see those changes.
        """
        self._check_usable()
        if taken.ticket == self._taken and self._batch.is_empty():
            self._staged.clear()
            budget = max(MIN_RECENT_ENTRY_BYTES, RECENT_ENTRY_BYTES // max(1, len(self._groups)))
            trimmed: Iterable[GroupLog] = self._appended
            if self._trimmed_all_at is None or budget < self._trimmed_all_at * 3 // 4:
                trimmed, self._trimmed_all_at = list(self._groups.values()), budget  # groups were added
            for group in trimmed:
                group._committed(budget)
            self._appended = set()

    def read_through(self, after: bytes | None, max_bytes: int) -> tuple[bytes | None, int]:
        """Read committed keys and values in key order, from just after `after` (from the first key when
        None), until about `max_bytes` are read: the last key read (None once the end is reached) and the
        bytes read. The database verifies what it reads; damage is heard by `on_damage` and raised."""
        lo, hi = keys.every_key_range()
        if after is not None:
            lo = after + b"\x00"  # the smallest key after `after`
        read = 0
        for key, value in self._scan(lo, hi):
            read += len(key) + len(value)
            if read >= max_bytes:
                return key, read
        return None, read

    def wal_stats(self) -> tuple[int, int]:
        """Cumulative `(writes, syncs)` of the write-ahead log since open (each commit adds one write)."""
        return self._db.wal_stats()

    # -- staging and reading, for GroupLog ------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failed is not None:
            raise StorageError("a commit failed; reopen the store") from self._failed

    def _write(self, key: bytes, value: bytes) -> None:
        """Stage a value the caller keeps in its own in-memory view (entries, states, metadata)."""
        self._check_usable()
        self._batch.put(key, value)

    def _put(self, key: bytes, value: bytes) -> None:
        """Stage a value that reads fetch by key (`_get`, `_scan_staged`) until it is committed."""
        self._write(key, value)
        self._staged[key] = value

    def _delete(self, key: bytes) -> None:
        self._check_usable()
        self._batch.delete(key)
        self._staged[key] = None

    def _delete_range(self, lo: bytes, hi: bytes) -> None:
        """Stage the deletion of `[lo, hi)` (the caller's in-memory view already reflects it)."""
        self._check_usable()
        self._batch.delete_range(lo, hi)

    def _damaged(self, exc: StorageError) -> StorageError:
        """Tell `on_damage` (which may stop the process) of damage met at runtime; returns `exc` to raise."""
        if self.on_damage is not None:
            self.on_damage(exc)
        return exc

    def _get(self, key: bytes) -> bytes | None:
        if key in self._staged:
            return self._staged[key]
        try:
            return self._db.get(key)
        except DatabaseCorruptionError as exc:
            self._damaged(exc)
            raise

    def _scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Committed keys and values in `[lo, hi)`, in key order."""
        try:
            yield from self._db.scan(lo, hi)
        except DatabaseCorruptionError as exc:
            self._damaged(exc)
            raise

    def _scan_staged(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Keys and values in `[lo, hi)` as committed and then staged, in key order."""
        staged = sorted((key, 0, value) for key, value in self._staged.items() if lo <= key < hi)
        committed = ((key, 1, value) for key, value in self._scan(lo, hi))
        previous = None
        for key, _, value in heapq.merge(staged, committed):
            if key != previous and value is not None:
                yield key, value
            previous = key


class GroupLog:
    """The durable log of one Raft group (the `LogStorage` protocol plus its write side).

    Memory holds only the hard state, membership, log bounds, snapshot metadata, the terms of the
    newest entries, the entries staged since the last commit and the newest written ones (a share of
    RECENT_ENTRY_BYTES); other entries are read by range.
    """

    def __init__(self, store: NodeStore, gid: GroupId, group_keys: keys.GroupKeys, conf: ConfState) -> None:
        """Use `NodeStore.create_group` or `NodeStore.group`."""
        self._store = store
        self.gid = gid
        self._keys = group_keys
        self._dropped = False
        self._hard_state = HardState()
        self._conf = conf
        self._start_index = 0  # the compaction point: first_index() - 1
        self._start_term = 0
        self._snapshot_meta = SnapshotMeta()
        self._last_index = 0
        self._tail_base = 1  # terms of entries _tail_base .. _last_index
        self._tail_terms: list[int] = []
        # Entries >= _recent_base are in _recent: every staged one, and the newest written ones.
        self._recent_base: int | None = None
        self._recent: list[Entry] = []
        self._recent_bytes = 0  # what _recent costs against the budget
        self._repair: Repair | None = None
        self._stale_tail = False  # damaged or unreachable entry records remain after _last_index

    # -- reads (LogStorage) ---------------------------------------------------------------------

    def initial_state(self) -> tuple[HardState, ConfState]:
        """The persisted hard state and membership."""
        return self._hard_state, self._conf

    def repair(self) -> Repair | None:
        """Why this replica is repairing (found damaged at open, until `finish_repair`), or None."""
        return self._repair

    def first_index(self) -> int:
        """The first index held as an entry."""
        return self._start_index + 1

    def last_index(self) -> int:
        """The last index held (the compaction point when no entry follows it)."""
        return self._last_index

    def term(self, index: int) -> int:
        """The term at `index`; raises `CompactedError` or `UnavailableError` outside the log."""
        if index == self._start_index:
            return self._start_term
        self._check_readable(index, index + 1)
        if index >= self._tail_base:
            return self._tail_terms[index - self._tail_base]
        return next(self._iter_entries(index, index + 1)).term

    def entries(self, lo: int, hi: int, max_bytes: int | None = None) -> list[Entry]:
        """Entries `lo <= index < hi`: at least one, then more while their data stays within `max_bytes`."""
        self._check_readable(lo, hi)
        result: list[Entry] = []
        size = 0
        for entry in self._iter_entries(lo, hi):
            size += len(entry.data)
            if result and max_bytes is not None and size > max_bytes:
                break
            result.append(entry)
        return result

    def snapshot(self) -> Snapshot:
        """The latest snapshot (index 0 and empty data when none was taken)."""
        data = self._read_record(self._keys.snapshot_data, records.unseal, self._snapshot_meta.index)
        return Snapshot(meta=self._snapshot_meta, data=data)

    # -- writes (staged until NodeStore.commit) -------------------------------------------------

    def append(self, entries: Sequence[Entry]) -> None:
        """Stage contiguous entries; existing entries at `entries[0].index` and after are replaced."""
        entries = list(entries)
        for previous, entry in itertools.pairwise(entries):
            if entry.index != previous.index + 1:
                raise ValueError(f"entries not contiguous at index {entry.index}")
        entries = [entry for entry in entries if entry.index > self._start_index]  # compacted: committed
        if not entries:
            return
        first = entries[0].index
        if first > self._last_index + 1:
            raise ValueError(f"append at {first} leaves a gap after last index {self._last_index}")
        self._check_not_rewriting_committed(entries)
        store = self._writer()
        if first <= self._last_index or self._stale_tail:
            store._delete_range(self._keys.entry(first), self._keys.entries_end)
            self._stale_tail = False
        for entry in entries:
            key = self._keys.entry(entry.index)
            store._write(key, records.encode_entry(key, entry))
        self._last_index = entries[-1].index
        store._appended.add(self)
        kept = len(self._recent)
        self._recent_base, self._recent = _splice(
            first if self._recent_base is None else self._recent_base, self._recent, first, entries
        )
        if len(self._recent) == kept + len(entries):  # appended at the end, nothing replaced
            self._recent_bytes += sum(map(_entry_cost, entries))
        else:
            self._recent_bytes = sum(map(_entry_cost, self._recent))
        self._tail_base, self._tail_terms = _splice(
            self._tail_base, self._tail_terms, first, [entry.term for entry in entries]
        )
        if len(self._tail_terms) > TERM_CACHE_SIZE:
            drop = len(self._tail_terms) - TERM_CACHE_SIZE
            self._tail_base, self._tail_terms = self._tail_base + drop, self._tail_terms[drop:]

    def set_hard_state(self, hs: HardState) -> None:
        """Stage the term, vote and commit index."""
        self._writer()._write(self._keys.hard_state, records.encode_hard_state(self._keys.hard_state, hs))
        self._hard_state = hs

    def finish_repair(self) -> None:
        """Stage the end of repair (no effect when not repairing): the replica holds again, from a leader,
        everything it may have acknowledged."""
        if self._repair is not None:
            log.warning("group %r: repaired through index %d; voting again", self.gid, self._repair.through)
            self._writer()._delete(self._keys.repair)
            self._repair = None

    def set_conf_state(self, cs: ConfState) -> None:
        """Stage the membership in force."""
        self._writer()._write(self._keys.conf_state, records.encode_conf_state(self._keys.conf_state, cs))
        self._conf = cs

    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Stage replacing the whole log with a snapshot received from a leader."""
        meta = snapshot.meta
        membership_only = meta.index == 0 and self._last_index == 0  # a new replica learns its group
        if meta.index <= self._snapshot_meta.index and not membership_only:
            raise SnapshotOutOfDateError(f"snapshot {meta.index} not newer than {self._snapshot_meta.index}")
        store = self._writer()
        store._delete_range(self._keys.entry(0), self._keys.entries_end)
        self._stale_tail = False
        self._stage_snapshot(snapshot)
        self._stage_log_start(meta.index, meta.term)
        self.set_conf_state(meta.conf)
        self._last_index = meta.index
        self._recent_base, self._recent, self._recent_bytes = meta.index + 1, [], 0
        self._tail_base, self._tail_terms = meta.index + 1, []

    def create_snapshot(self, index: int, conf: ConfState, data: bytes) -> Snapshot:
        """Stage the application's snapshot `data` taken at applied index `index` with membership `conf`."""
        if index <= self._snapshot_meta.index:
            raise SnapshotOutOfDateError(f"snapshot {index} is not newer than {self._snapshot_meta.index}")
        if index > self._hard_state.commit:
            raise ValueError(f"snapshot at {index} is beyond the commit index {self._hard_state.commit}")
        snapshot = Snapshot(meta=SnapshotMeta(index=index, term=self.term(index), conf=conf), data=data)
        self._stage_snapshot(snapshot)
        return snapshot

    def compact(self, index: int, keep: Iterable[int] = ()) -> None:
        """Stage dropping entries up to `index` (at most the snapshot index); no effect if already done.

        Entries in `keep` stay stored below the new first index, for the application to read with
        `kept_entry` (message bodies still queued) until it drops them with `drop_kept`."""
        if index <= self._start_index:
            return
        if index > self._snapshot_meta.index:
            raise ValueError(f"cannot compact to {index}, beyond the snapshot at {self._snapshot_meta.index}")
        term = self.term(index)
        store = self._writer()
        lo = self._start_index + 1
        for kept in sorted(k for k in set(keep) if lo <= k <= index):
            if kept > lo:
                store._delete_range(self._keys.entry(lo), self._keys.entry(kept))
            lo = kept + 1
        if lo <= index:
            store._delete_range(self._keys.entry(lo), self._keys.entry(index + 1))
        self._stage_log_start(index, term)

    def kept_entry(self, index: int) -> Entry:
        """The entry at `index`, in the log or kept below it by `compact`; raises `CorruptionError` when it
        is not stored."""
        if index > self._start_index:
            return self.entries(index, index + 1)[0]
        key = self._keys.entry(index)
        value = self._store._get(key)
        if value is None:
            raise self._store._damaged(CorruptionError(self.gid, index, "kept entry missing"))
        return self._decode_entry(key, index, value)

    def drop_kept(self, index: int) -> None:
        """Stage deleting an entry kept below the first index."""
        if index > self._start_index:
            raise ValueError(f"entry {index} is in the log (first index {self.first_index()}), not kept")
        self._writer()._delete(self._keys.entry(index))

    # -- the application's key space --------------------------------------------------------------

    def app_put(self, key: bytes, value: bytes) -> None:
        """Stage `key = value` in the group's application key space."""
        self._writer()._put(self._keys.app(key), value)

    def app_delete(self, key: bytes) -> None:
        """Stage the deletion of an application key."""
        self._writer()._delete(self._keys.app(key))

    def app_get(self, key: bytes) -> bytes | None:
        """The value of an application key (staged changes included), None when absent."""
        return self._store._get(self._keys.app(key))

    def app_items(self, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """Application keys starting with `prefix` and their values, in key order."""
        lo, hi = self._keys.app_range(prefix)
        for key, value in self._store._scan_staged(lo, hi):
            yield self._keys.app_key(key), value

    # -- internals ------------------------------------------------------------------------------

    def _writer(self) -> NodeStore:
        if self._dropped:
            raise StorageError(f"group {self.gid!r} was dropped")
        return self._store

    def _committed(self, budget: int) -> None:
        """Everything staged is written: keep only the newest entries, within `budget` bytes.

        Over budget, the oldest go until a quarter of it is free, so trimming (which copies the list)
        happens once per many rounds rather than in every one."""
        if self._recent_bytes <= budget:
            return
        drop = 0
        while self._recent_bytes > budget * 3 // 4 and drop < len(self._recent):
            self._recent_bytes -= _entry_cost(self._recent[drop])
            drop += 1
        if drop == len(self._recent):
            self._recent_base, self._recent, self._recent_bytes = None, [], 0
        elif drop > 0:
            assert self._recent_base is not None
            self._recent_base, self._recent = self._recent_base + drop, self._recent[drop:]

    def _check_readable(self, lo: int, hi: int) -> None:
        if lo > hi:
            raise ValueError(f"invalid range [{lo}, {hi})")
        if lo <= self._start_index:
            raise CompactedError(f"index {lo} is compacted (first index {self.first_index()})")
        if hi > self._last_index + 1:
            raise UnavailableError(f"index {hi - 1} is beyond the last index {self._last_index}")

    def _check_not_rewriting_committed(self, entries: list[Entry]) -> None:
        """Raft never replaces a committed entry; refuse to, rather than lose a confirmed one."""
        overlap_hi = min(self._hard_state.commit, self._last_index) + 1
        if entries[0].index >= overlap_hi:
            return
        for old, new in zip(self._iter_entries(entries[0].index, overlap_hi), entries, strict=False):
            if old.term != new.term:
                raise ValueError(f"entry {new.index} is committed at term {old.term}, not {new.term}")

    def _iter_entries(self, lo: int, hi: int) -> Iterator[Entry]:
        """Entries `lo <= index < hi` (within bounds), committed ones checked against their checksums."""
        split = hi if self._recent_base is None else min(hi, max(lo, self._recent_base))
        expected = lo
        for key, value in self._store._scan(self._keys.entry(lo), self._keys.entry(split)):
            index = self._keys.entry_index(key)
            if index != expected:
                raise self._store._damaged(CorruptionError(self.gid, expected, "entry missing"))
            yield self._decode_entry(key, index, value)
            expected += 1
        if expected != split:
            raise self._store._damaged(CorruptionError(self.gid, expected, "entry missing"))
        if self._recent_base is not None:
            yield from self._recent[split - self._recent_base : hi - self._recent_base]

    def _decode_entry(self, key: bytes, index: int, value: bytes) -> Entry:
        try:
            return records.decode_entry(key, index, value)
        except records.BadRecord as exc:
            raise self._store._damaged(CorruptionError(self.gid, index, str(exc))) from exc

    def _read_record(self, key: bytes, decode: Callable[[bytes, bytes], T], index: int | None = None) -> T:
        value = self._store._get(key)
        try:
            if value is None:
                raise records.BadRecord("missing")
            return decode(key, value)
        except records.BadRecord as exc:
            what = key[len(self._keys.prefix) :].decode()
            raise self._store._damaged(CorruptionError(self.gid, index, f"record {what}: {exc}")) from exc

    def _stage_snapshot(self, snapshot: Snapshot) -> None:
        store, group_keys = self._writer(), self._keys
        store._write(
            group_keys.snapshot_meta, records.encode_snapshot_meta(group_keys.snapshot_meta, snapshot.meta)
        )
        store._put(group_keys.snapshot_data, records.seal(group_keys.snapshot_data, snapshot.data))
        self._snapshot_meta = snapshot.meta

    def _stage_log_start(self, index: int, term: int) -> None:
        self._writer()._write(
            self._keys.log_start, records.encode_position(self._keys.log_start, index, term)
        )
        self._start_index, self._start_term = index, term

    @classmethod
    def _recover(cls, store: NodeStore, gid: GroupId) -> GroupLog:
        """Load a group's state and verify its whole log; nothing is deleted.

        The log is the contiguous run of valid entries after the compaction point. RocksDB writes a batch
        atomically, so anything else (a damaged or missing entry, entries past one, a commit index or
        snapshot beyond the run, a damaged hard state) is damage to what the node may have acknowledged:
        the group opens repairing (see `repair`), the damaged records stay until entries from a leader
        replace them. Damaged membership, log start or snapshot metadata still raise `CorruptionError`.
        """
        group = cls(store, gid, keys.GroupKeys(gid), ConfState())
        group_keys = group._keys
        group._conf = group._read_record(group_keys.conf_state, records.decode_conf_state)
        group._start_index, group._start_term = group._read_record(
            group_keys.log_start, records.decode_position
        )
        group._snapshot_meta = group._read_record(group_keys.snapshot_meta, records.decode_snapshot_meta)
        damage: list[Repair] = []
        if store._get(group_keys.repair) is not None:
            damage.append(group._read_record(group_keys.repair, records.decode_repair))
        hard_state_lost = False
        try:
            group._hard_state = group._read_record(group_keys.hard_state, records.decode_hard_state)
        except CorruptionError as exc:
            damage.append(Repair(exc.reason, None, 0))
            hard_state_lost = True
        expected = group._start_index + 1
        highest, top_term = 0, max(group._start_term, group._snapshot_meta.term)
        terms: deque[int] = deque(maxlen=TERM_CACHE_SIZE)
        log_damaged = False
        for key, value in store._scan(group._keys.entry(expected), group._keys.entries_end):
            index = group._keys.entry_index(key)
            highest = index
            try:
                entry: Entry | None = records.decode_entry(key, index, value)
            except records.BadRecord:
                entry = None
            if entry is not None:
                top_term = max(top_term, entry.term)
            if log_damaged:
                continue
            if index == expected and entry is not None:
                terms.append(entry.term)
                expected += 1
                continue
            log_damaged = True
            damage.append(Repair("entry damaged" if index == expected else "entry missing", expected, 0))
        group._last_index = expected - 1
        group._tail_base, group._tail_terms = expected - len(terms), list(terms)
        group._stale_tail = highest > group._last_index
        if group._snapshot_meta.index > group._last_index:
            damage.append(Repair("snapshot beyond the last valid entry", group._snapshot_meta.index, 0))
            meta = group._snapshot_meta
            group._stage_log_start(meta.index, meta.term)
            group._last_index, group._tail_base, group._tail_terms = meta.index, meta.index + 1, []
        hs = group._hard_state
        if hs.commit > group._last_index:
            damage.append(Repair("commit index beyond the last valid entry", hs.commit, 0))
        if hard_state_lost:  # whom it voted for is unknown: no vote in the highest term found
            hs = HardState(term=top_term, vote=UNKNOWN_VOTE, commit=group._snapshot_meta.index)
        group._hard_state = replace(hs, commit=min(hs.commit, group._last_index))
        if damage:
            through = max([highest, hs.commit, group._hard_state.commit] + [d.through for d in damage])
            # The stored membership holds every change up to the stored commit (they are written
            # together); with the hard state lost, assume up to `through`.
            conf_through = max([through if hard_state_lost else hs.commit] + [d.conf_through for d in damage])
            first = damage[0]
            group._repair = Repair(first.reason, first.index, through, conf_through)
            store._put(group_keys.repair, records.encode_repair(group_keys.repair, group._repair))
            group.set_hard_state(group._hard_state)
            log.warning(
                "group %r: %s at %s; the valid log ends at %d; repairing from the leader through index %d, "
                "not voting until then (nothing was deleted)",
                gid,
                first.reason,
                "metadata" if first.index is None else f"index {first.index}",
                group._last_index,
                through,
            )
        return group
