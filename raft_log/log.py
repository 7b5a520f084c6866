"""The core's view of its log: stable storage plus entries and a snapshot not yet persisted."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from raft_log.types import (
    CompactedError,
    Entry,
    EntryKind,
    LogStorage,
    Snapshot,
    StorageError,
    UnavailableError,
)


def limit_size(entries: list[Entry], max_bytes: int | None) -> list[Entry]:
    """The longest prefix of `entries` (at least one) whose data fits in `max_bytes`."""
    if max_bytes is None or not entries:
        return entries
    total = 0
    for count, entry in enumerate(entries):
        total += len(entry.data)
        if count > 0 and total > max_bytes:
            return entries[:count]
    return entries


class RaftLog:
    """Reads merge storage with the unstable tail; `committed` and `applied` are tracked here.

    `conf_change_indexes` lists where uncommitted membership changes sit, so the core can apply
    each one when it commits without rescanning the log.
    """

    def __init__(self, storage: LogStorage, committed: int, applied: int, conf_through: int = 0) -> None:
        """`conf_through`: the membership given with `storage` already holds every change up to there
        (a repairing replica's commit index may be below what its membership reflects)."""
        self.storage = storage
        self.conf_through = conf_through
        self.unstable: list[Entry] = []
        self.unstable_offset = storage.last_index() + 1
        self.pending_snapshot: Snapshot | None = None
        self.committed = committed
        self.applied = applied
        uncommitted = self.slice(
            max(committed, min(conf_through, self.last_index())) + 1, self.last_index() + 1
        )
        self.conf_change_indexes = [e.index for e in uncommitted if e.kind is EntryKind.CONF_CHANGE]

    # --- reading ---

    def first_index(self) -> int:
        if self.pending_snapshot is not None:
            return self.pending_snapshot.meta.index + 1
        return self.storage.first_index()

    def last_index(self) -> int:
        if self.unstable:
            return self.unstable[-1].index
        if self.pending_snapshot is not None:
            return self.pending_snapshot.meta.index
        return self.storage.last_index()

    def term(self, index: int) -> int:
        """Term of the entry at `index`; raises `CompactedError`/`UnavailableError` like storage."""
        if index >= self.unstable_offset:
            if index > self.last_index():
                raise UnavailableError(index)
            return self.unstable[index - self.unstable_offset].term
        if self.pending_snapshot is not None:
            meta = self.pending_snapshot.meta
            if index == meta.index:
                return meta.term
            raise CompactedError(index)
        return self.storage.term(index)

    def last_term(self) -> int:
        return self.term(self.last_index())

    def match_term(self, index: int, term: int) -> bool:
        try:
            return self.term(index) == term
        except StorageError:
            return False

    def slice(self, lo: int, hi: int, max_bytes: int | None = None) -> list[Entry]:
        """Entries `lo <= index < hi` (at least one when lo < hi), up to `max_bytes` of data."""
        if lo >= hi:
            return []
        if lo < self.first_index():
            raise CompactedError(lo)
        if hi > self.last_index() + 1:
            raise UnavailableError(hi)
        result: list[Entry] = []
        if lo < self.unstable_offset:
            result = self.storage.entries(lo, min(hi, self.unstable_offset), max_bytes)
            if result[-1].index < min(hi, self.unstable_offset) - 1:
                return result  # the size limit was reached inside storage
        if hi > self.unstable_offset:
            start = max(lo, self.unstable_offset) - self.unstable_offset
            result = result + self.unstable[start : hi - self.unstable_offset]
        return limit_size(result, max_bytes)

    def is_up_to_date(self, last_index: int, last_term: int) -> bool:
        """Whether a log ending at (`last_index`, `last_term`) is at least as up to date as ours."""
        our_term = self.last_term()
        return last_term > our_term or (last_term == our_term and last_index >= self.last_index())

    def find_conflict_by_term(self, index: int, term: int) -> int:
        """The largest index <= `index` whose term is <= `term` (or the first we cannot read)."""
        while index > 0:
            try:
                if self.term(index) <= term:
                    return index
            except StorageError:
                return index
            index -= 1
        return 0

    # --- changing ---

    def append(self, entries: Sequence[Entry]) -> None:
        """Add `entries` after the log, dropping any of ours from `entries[0].index` on."""
        first = entries[0].index
        if first <= self.committed:
            raise AssertionError(f"would overwrite committed entry {first} (committed {self.committed})")
        cut = bisect.bisect_left(self.conf_change_indexes, first)
        del self.conf_change_indexes[cut:]
        self.conf_change_indexes.extend(
            e.index for e in entries if e.kind is EntryKind.CONF_CHANGE and e.index > self.conf_through
        )
        if first == self.unstable_offset + len(self.unstable):
            self.unstable.extend(entries)
        elif first <= self.unstable_offset:
            self.unstable = list(entries)
            self.unstable_offset = first
        else:
            self.unstable = self.unstable[: first - self.unstable_offset] + list(entries)

    def find_conflict(self, entries: Sequence[Entry]) -> int:
        """Index of the first entry that is new or differs in term from ours (0 when all match)."""
        for entry in entries:
            if not self.match_term(entry.index, entry.term):
                return entry.index
        return 0

    def maybe_append(
        self, prev_index: int, prev_term: int, commit: int, entries: Sequence[Entry]
    ) -> int | None:
        """Append a leader's entries if our log matches at `prev_index`; the last new index, or None.

        Only entries after a real term conflict are replaced: a matching suffix is never truncated.
        """
        if not self.match_term(prev_index, prev_term):
            return None
        last_new = prev_index + len(entries)
        conflict = self.find_conflict(entries)
        if conflict:
            self.append(entries[conflict - prev_index - 1 :])
        self.commit_to(min(commit, last_new))
        return last_new

    def commit_to(self, index: int) -> None:
        if index > self.committed:
            if index > self.last_index():
                raise AssertionError(f"commit {index} beyond the last index {self.last_index()}")
            self.committed = index

    def maybe_commit(self, index: int, term: int) -> bool:
        """Commit up to `index` only if that entry is from `term` (the leader's current term)."""
        if index > self.committed and self.match_term(index, term):
            self.committed = index
            return True
        return False

    def restore(self, snapshot: Snapshot) -> None:
        """Replace the log with `snapshot` (to be persisted through the next Ready)."""
        self.committed = snapshot.meta.index
        self.unstable = []
        self.unstable_offset = snapshot.meta.index + 1
        self.pending_snapshot = snapshot
        self.conf_change_indexes = []

    def pop_committed_conf_changes(self) -> list[Entry]:
        """Membership-change entries that are now committed and not yet handed out."""
        popped = []
        while self.conf_change_indexes and self.conf_change_indexes[0] <= self.committed:
            index = self.conf_change_indexes.pop(0)
            popped.extend(self.slice(index, index + 1))
        return popped

    # --- the Ready cycle ---

    def next_committed_entries(self, max_bytes: int) -> list[Entry]:
        """Committed entries the application has not applied yet, in order."""
        return self.slice(self._first_unapplied(), self.committed + 1, max_bytes)

    def has_next_committed_entries(self) -> bool:
        return self._first_unapplied() <= self.committed

    def _first_unapplied(self) -> int:
        if self.pending_snapshot is not None:
            return max(self.applied, self.pending_snapshot.meta.index) + 1
        return self.applied + 1

    def applied_to(self, index: int) -> None:
        self.applied = max(self.applied, index)

    def stable_last_index(self) -> int:
        """The last index of the persisted log that this log still holds (0 while a snapshot is pending)."""
        return 0 if self.pending_snapshot is not None else self.unstable_offset - 1

    def stable_to(self, index: int, term: int) -> None:
        """Entries through (`index`, `term`) are persisted: drop them from the unstable tail."""
        if self.unstable_offset <= index <= self.last_index() and self.term(index) == term:
            self.unstable = self.unstable[index + 1 - self.unstable_offset :]
            self.unstable_offset = index + 1

    def stable_snapshot_to(self, index: int) -> None:
        if self.pending_snapshot is not None and self.pending_snapshot.meta.index == index:
            self.pending_snapshot = None
