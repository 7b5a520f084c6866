"""A ballast file in the data directory: room set aside while the disk has plenty, given back the moment a
write fails for want of it, so that the node can open its database again, take snapshots and compact
its logs while its consumers drain (CockroachDB keeps one for the same reason).

Its size is the smaller of the node's `disk_ballast_bytes` and 1 % of the filesystem; it is made only
while the disk keeps the node's `disk_free_limit` free beside it, so it never raises the alarm itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

BALLAST = "disk-ballast"
SHARE_OF_DISK = 100  # at most one hundredth of the filesystem


def ballast_size(data_dir: Path, most: int) -> int:
    """The ballast's size on the filesystem holding `data_dir`, at most `most` bytes."""
    return min(most, shutil.disk_usage(data_dir).total // SHARE_OF_DISK)


def ensure_ballast(data_dir: Path, most: int, keep_free: int) -> int:
    """Make the ballast (of `ballast_size`) unless it exists, or the disk would keep less than
    `keep_free` bytes free beside it; returns the ballast's size now (0: none)."""
    path = data_dir / BALLAST
    if path.exists():
        return path.stat().st_size
    size = ballast_size(data_dir, most)
    if size <= 0 or shutil.disk_usage(data_dir).free - size < keep_free:
        return 0
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(descriptor, 0, size)  # blocks really taken, not a sparse promise
        os.fsync(descriptor)
    except OSError as exc:
        log.warning("no disk ballast made: %s", exc)
        os.close(descriptor)
        path.unlink(missing_ok=True)
        return 0
    os.close(descriptor)
    log.info("a disk ballast of %d bytes set aside in %s", size, path)
    return size


def release_ballast(data_dir: Path) -> int:
    """Delete the ballast, if any; returns the bytes given back."""
    path = data_dir / BALLAST
    with contextlib.suppress(FileNotFoundError):
        size = path.stat().st_size
        path.unlink()
        log.warning("the disk ballast (%d bytes) is given back after a failed write", size)
        return size
    return 0
