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


def _ballast_size(data_dir: Path, most: int) -> int:
    """The ballast's size on the filesystem holding `data_dir`, at most `most` bytes."""
    return min(most, shutil.disk_usage(data_dir).total // SHARE_OF_DISK)


def ensure_ballast(data_dir: Path, most: int, keep_free: int) -> None:
    """Make the ballast (`_ballast_size`) unless it is there whole, or the disk would keep less than
    `keep_free` bytes free beside it; with `most` 0, remove any. A filesystem that cannot preallocate
    (no `posix_fallocate`) gets none."""
    path = data_dir / BALLAST
    size = _ballast_size(data_dir, most)
    held = path.stat().st_size if path.exists() else 0
    if held and held >= size > 0:
        return
    path.unlink(missing_ok=True)  # none wanted, or less than wanted (a crash while it was made)
    allocate = getattr(os, "posix_fallocate", None)
    if size <= 0 or allocate is None or shutil.disk_usage(data_dir).free - size < keep_free:
        return
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        allocate(descriptor, 0, size)  # blocks really taken, not a sparse promise
        os.fsync(descriptor)
    except OSError as exc:
        log.warning("no disk ballast made: %s", exc)
        path.unlink(missing_ok=True)
        return
    finally:
        os.close(descriptor)
    log.info("a disk ballast of %d bytes set aside in %s", size, path)


def release_ballast(data_dir: Path) -> None:
    """Delete the ballast, if any."""
    path = data_dir / BALLAST
    with contextlib.suppress(FileNotFoundError):
        size = path.stat().st_size
        path.unlink()
        log.warning("the disk ballast (%d bytes) is given back after a failed write", size)
