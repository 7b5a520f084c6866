"""An in-memory `LogStorage` with the same write side as the RocksDB storage (for tests and simulation)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from raft_log.log import limit_size
from raft_log.types import (
    CompactedError,
    ConfState,
    Entry,
    HardState,
    Snapshot,
    SnapshotMeta,
    UnavailableError,
)

_NO_MEMBERS = ConfState()


class MemoryStorage:
    """Entries after a compaction point, plus hard state, membership and the latest snapshot."""

    def __init__(self, conf: ConfState = _NO_MEMBERS) -> None:
        self._hard_state = HardState()
        self._conf = conf
        self._snapshot = Snapshot(meta=SnapshotMeta(conf=conf))
        self._base_index = 0  # the last compacted index; its term is `_base_term`
        self._base_term = 0
        self._entries: list[Entry] = []

    # --- read side (LogStorage) ---

    def initial_state(self) -> tuple[HardState, ConfState]:
        return self._hard_state, self._conf

    def first_index(self) -> int:
        return self._base_index + 1

    def last_index(self) -> int:
        return self._base_index + len(self._entries)

    def term(self, index: int) -> int:
        if index < self._base_index:
            raise CompactedError(index)
        if index > self.last_index():
            raise UnavailableError(index)
        if index == self._base_index:
            return self._base_term
        return self._entries[index - self._base_index - 1].term

    def entries(self, lo: int, hi: int, max_bytes: int | None = None) -> list[Entry]:
        if lo <= self._base_index:
            raise CompactedError(lo)
        if hi > self.last_index() + 1:
            raise UnavailableError(hi)
        offset = self._base_index + 1
        return limit_size(self._entries[lo - offset : hi - offset], max_bytes)

    def snapshot(self) -> Snapshot:
        return self._snapshot

    # --- write side (the driver's) ---

    def append(self, entries: Sequence[Entry]) -> None:
        """Store `entries`, replacing any held at or after `entries[0].index`."""
        entries = [e for e in entries if e.index > self._base_index]
        if not entries:
            return
        first = entries[0].index
        if first > self.last_index() + 1:
            raise ValueError(f"gap: appending at {first} after {self.last_index()}")
        for before, after in itertools.pairwise(entries):
            if after.index != before.index + 1:
                raise ValueError("appended entries must be contiguous")
        del self._entries[first - self._base_index - 1 :]
        self._entries.extend(entries)

    def set_hard_state(self, hard_state: HardState) -> None:
        self._hard_state = hard_state

    def set_conf_state(self, conf: ConfState) -> None:
        self._conf = conf

    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Replace the whole log with `snapshot` (received from the leader)."""
        if snapshot.meta.index < self._snapshot.meta.index:
            raise ValueError("snapshot is older than the one held")
        self._snapshot = snapshot
        self._conf = snapshot.meta.conf
        self._base_index, self._base_term = snapshot.meta.index, snapshot.meta.term
        self._entries = []

    def create_snapshot(self, index: int, conf: ConfState, data: bytes) -> Snapshot:
        """Record the application's own snapshot of its state as of the applied `index`."""
        if index <= self._snapshot.meta.index:
            raise ValueError(f"snapshot at {index} is not newer than {self._snapshot.meta.index}")
        if index > self._hard_state.commit:
            raise ValueError(f"snapshot at {index} is beyond the commit index {self._hard_state.commit}")
        self._snapshot = Snapshot(SnapshotMeta(index=index, term=self.term(index), conf=conf), data)
        return self._snapshot

    def compact(self, index: int) -> None:
        """Drop entries up to `index`, which the snapshot must already cover."""
        if index <= self._base_index:
            return
        if index > self._snapshot.meta.index:
            raise ValueError(f"compacting to {index} beyond the snapshot at {self._snapshot.meta.index}")
        term = self.term(index)
        self._entries = self._entries[index - self._base_index :]
        self._base_index, self._base_term = index, term
