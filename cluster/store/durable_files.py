"""Files and directory entries that survive a power failure, not only a process crash: a file's data is
durable after an fsync of the file, its name only after an fsync of the directory holding it."""

from __future__ import annotations

import os
from pathlib import Path


def sync_directory(path: Path) -> None:
    """Make the entries of directory `path` (files created, renamed or removed in it) durable."""
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def make_directory(path: Path) -> None:
    """Create `path` and its missing parents, each with a durable name."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):
        sync_directory(created.parent)


def write_durably(path: Path, text: str, mode: int | None = None) -> None:
    """Replace `path` with `text` (permissions `mode` when given), atomically and durably: a temporary
    file, fsynced, renamed over `path`, then its directory fsynced. A power failure leaves the old
    content or the new, whole."""
    temporary = path.with_name(f"{path.name}.tmp")
    with temporary.open("w", encoding="utf-8") as out:
        if mode is not None:
            os.fchmod(out.fileno(), mode)
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(path)
    sync_directory(path.parent)
