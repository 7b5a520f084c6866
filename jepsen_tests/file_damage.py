"""Damage at rest: flip bits in, cut the tail of, or zero a block of one file of a node's database.

Every change is written through the file's path and fsynced, so it is on the disk (and survives a
file system that drops unsynced writes) before the node opens the file again.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

KINDS = ("bitflip", "truncate", "zero")
BLOCK_BYTES = 4096
MAX_FLIPPED_BITS = 3


@dataclass(frozen=True)
class FileDamage:
    """What was done to which file: `offset` is where the damage starts, `length` how many bytes it spans."""

    path: Path
    kind: str
    offset: int
    length: int

    def describe(self) -> str:
        """One line naming file, kind and offset."""
        return f"{self.kind} {self.path.parent.name}/{self.path.name} at {self.offset} (+{self.length} bytes)"


def is_database_file(path: Path) -> bool:
    """RocksDB files that hold data: tables (SST), the write-ahead log, the MANIFEST and blob files."""
    name = path.name
    return name.endswith((".sst", ".log", ".blob")) or name.startswith("MANIFEST-")


def damageable_files(database_dir: Path) -> list[Path]:
    """The non-empty data files of a RocksDB directory, sorted."""
    if not database_dir.is_dir():
        return []
    files = (p for p in database_dir.iterdir() if p.is_file() and is_database_file(p))
    return sorted(p for p in files if p.stat().st_size)


def damage_file(path: Path, kind: str, rng: random.Random) -> FileDamage:
    """Apply one kind of damage at a random place of a non-empty file and fsync it."""
    size = path.stat().st_size
    if kind == "truncate":
        offset = rng.randrange(size)
        os.truncate(path, offset)
        _sync(path)
        return FileDamage(path, kind, offset, size - offset)
    offset = rng.randrange((size + BLOCK_BYTES - 1) // BLOCK_BYTES) * BLOCK_BYTES
    length = min(BLOCK_BYTES, size - offset)
    descriptor = os.open(path, os.O_RDWR)
    try:
        block = bytearray(os.pread(descriptor, length, offset))
        if kind == "zero":
            block = bytearray(length)
        elif kind == "bitflip":
            for bit in rng.sample(range(length * 8), min(length * 8, rng.randint(1, MAX_FLIPPED_BITS))):
                block[bit // 8] ^= 1 << (bit % 8)
        else:
            raise ValueError(f"unknown damage {kind!r}; known: {', '.join(KINDS)}")
        os.pwrite(descriptor, bytes(block), offset)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return FileDamage(path, kind, offset, length)


def _sync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
