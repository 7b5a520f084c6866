"""What a `NodeStore` needs of the key-value database under it: ordered keys, atomic batches, fsync.

Production uses RocksDB (`raft_log.storage.rocksdb_database`); the driver simulation uses a database in memory
that loses what was never synced on a simulated power failure (`raft_log.testing.simulated_database`).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import Protocol

from ..types import StorageError

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_NO_SPACE_TEXTS = ("No space left on device", "Disk quota exceeded")  # RocksDB's IO errors say so


def out_of_space(exc: BaseException) -> bool:
    """Whether a write failed for want of space (ENOSPC, EDQUOT), as the OS or RocksDB reports it."""
    if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
        return True
    return any(text in str(exc) for text in _NO_SPACE_TEXTS)


class DatabaseCorruptionError(StorageError):
    """The database found its own files damaged (RocksDB's `Corruption` status) when opening, reading or
    writing: what it holds can no longer be trusted (docs/internals/storage.md, decision 0011)."""


class WriteBatch(Protocol):
    """Changes applied together by one `Database.write`, in the order they were made."""

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None: ...

    def delete_range(self, begin: bytes, end: bytes) -> None:
        """Delete every key in `[begin, end)`."""
        ...

    def is_empty(self) -> bool: ...

    def size_in_bytes(self) -> int: ...


class Database(Protocol):
    """An ordered key-value database whose writes are atomic batches, durable once a synced write returns.

    A synced write makes every earlier write durable too (one write-ahead log, recovered in order).
    Damage it finds in its own files raises `DatabaseCorruptionError` (never a silently shorter read).
    """

    def new_batch(self) -> WriteBatch: ...

    def write(self, batch: WriteBatch, sync: bool) -> None:
        """Apply `batch` atomically; with `sync`, return only once it (and all before it) is durable."""
        ...

    def get(self, key: bytes) -> bytes | None: ...

    def scan(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Keys and values in `[lo, hi)`, in key order."""
        ...

    def wal_stats(self) -> tuple[int, int]:
        """Cumulative `(writes, syncs)` of the write-ahead log since open."""
        ...

    def close(self) -> None: ...
