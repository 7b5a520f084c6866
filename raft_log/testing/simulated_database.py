"""A `Database` in memory with a disk's failure modes, for the driver simulation.

Writes land in the operating system's cache at once: a process crash keeps them all, and reopening
makes them durable. Only a synced write (and, being one write-ahead log, every write before it) is on
the disk: a power failure keeps that and an ordered prefix of the later writes, as RocksDB's
write-ahead log recovery would.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

from raft_log.storage import database

_PUT, _DELETE, _DELETE_RANGE = 0, 1, 2


@dataclass(slots=True)
class SimulatedBatch:
    """The changes of one write, in order."""

    ops: list[tuple[int, bytes, bytes]] = field(default_factory=list)
    size: int = 0

    def put(self, key: bytes, value: bytes) -> None:
        self.ops.append((_PUT, key, value))
        self.size += len(key) + len(value)

    def delete(self, key: bytes) -> None:
        self.ops.append((_DELETE, key, b""))
        self.size += len(key)

    def delete_range(self, begin: bytes, end: bytes) -> None:
        self.ops.append((_DELETE_RANGE, begin, end))
        self.size += len(begin) + len(end)

    def is_empty(self) -> bool:
        return not self.ops

    def size_in_bytes(self) -> int:
        return self.size


class _Keys:
    """Sorted keys and their values."""

    def __init__(self, items: dict[bytes, bytes] | None = None) -> None:
        self.values = dict(items or {})
        self.order = sorted(self.values)

    def apply(self, batch: SimulatedBatch) -> None:
        for op, key, value in batch.ops:
            if op == _PUT:
                if key not in self.values:
                    bisect.insort(self.order, key)
                self.values[key] = value
            elif op == _DELETE:
                if self.values.pop(key, None) is not None:
                    del self.order[bisect.bisect_left(self.order, key)]
            else:
                lo, hi = bisect.bisect_left(self.order, key), bisect.bisect_left(self.order, value)
                for gone in self.order[lo:hi]:
                    del self.values[gone]
                del self.order[lo:hi]


class SimulatedDatabase:
    """One node's database across its simulated crashes and power failures (see the module docstring)."""

    def __init__(self) -> None:
        self._durable: dict[bytes, bytes] = {}
        self._unsynced: list[SimulatedBatch] = []
        self._visible = _Keys()
        self._writes = 0
        self._syncs = 0
        self.closed = False

    @property
    def unsynced_writes(self) -> int:
        """How many writes a power failure could lose now."""
        return len(self._unsynced)

    def new_batch(self) -> SimulatedBatch:
        return SimulatedBatch()

    def write(self, batch: database.WriteBatch, sync: bool) -> None:
        if not isinstance(batch, SimulatedBatch):
            raise TypeError("a SimulatedDatabase writes only batches of its own `new_batch`")
        if self.closed:
            raise RuntimeError("the database is closed")
        self._visible.apply(batch)
        self._unsynced.append(batch)
        self._writes += 1
        if sync:
            self._syncs += 1
            self._durable = dict(self._visible.values)
            self._unsynced = []

    def get(self, key: bytes) -> bytes | None:
        return self._visible.values.get(key)

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        keys = self._visible
        start, end = bisect.bisect_left(keys.order, lo), bisect.bisect_left(keys.order, hi)
        for key in keys.order[start:end]:
            yield key, keys.values[key]

    def wal_stats(self) -> tuple[int, int]:
        return self._writes, self._syncs

    def close(self) -> None:
        self.closed = True

    def reopen(self) -> None:
        """After a process crash: everything written is still there, and opening makes it durable (as
        `RocksDatabase.open` does), so a node may acknowledge what it finds."""
        self._durable = dict(self._visible.values)
        self._unsynced = []
        self.closed = False

    def rot(self, key: bytes) -> None:
        """A disk fault while the node is down: the stored value of `key` gets its last byte flipped."""
        for values in (self._durable, self._visible.values):
            if key in values:
                values[key] = values[key][:-1] + bytes([values[key][-1] ^ 0x5A])

    def lose_power(self, surviving_writes: int) -> None:
        """A power failure: the synced state plus the first `surviving_writes` unsynced writes remain."""
        keys = _Keys(self._durable)
        for batch in self._unsynced[:surviving_writes]:
            keys.apply(batch)
        self._visible = keys
        self._durable = dict(keys.values)
        self._unsynced = []
        self.closed = False
