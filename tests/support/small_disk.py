"""A real small filesystem for tests that fill a disk: a tmpfs of a given size (root mounts it, as CI
runs)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def small_disk(path: Path, size: int) -> Iterator[Path]:
    """A tmpfs of `size` bytes mounted at `path` for the block's length."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
