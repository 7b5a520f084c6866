"""The disk ballast (`cluster.store.disk_ballast`) on a real filesystem: set aside at its size while the
disk keeps the limit free beside it, made whole again after a partial one, removed when none is wanted,
and given back on demand."""

from __future__ import annotations

import shutil
from pathlib import Path

from cluster.store.disk_ballast import BALLAST, SHARE_OF_DISK, ensure_ballast, release_ballast

MIB = 1024 * 1024


def wanted(tmp_path: Path, most: int) -> int:
    return min(most, shutil.disk_usage(tmp_path).total // SHARE_OF_DISK)


def test_a_ballast_is_set_aside_at_its_size_and_given_back(tmp_path: Path) -> None:
    ensure_ballast(tmp_path, MIB, keep_free=0)
    assert (tmp_path / BALLAST).stat().st_size == wanted(tmp_path, MIB)
    assert (tmp_path / BALLAST).stat().st_blocks * 512 >= wanted(tmp_path, MIB)  # taken, not sparse
    release_ballast(tmp_path)
    assert not (tmp_path / BALLAST).exists()
    release_ballast(tmp_path)  # none: nothing to give back


def test_no_ballast_where_it_would_eat_into_the_free_disk_the_limit_keeps(tmp_path: Path) -> None:
    ensure_ballast(tmp_path, MIB, keep_free=shutil.disk_usage(tmp_path).free)
    assert not (tmp_path / BALLAST).exists()


def test_a_partial_ballast_is_made_whole_and_none_wanted_removes_it(tmp_path: Path) -> None:
    (tmp_path / BALLAST).write_bytes(b"\0" * 10)  # a crash while it was made
    ensure_ballast(tmp_path, MIB, keep_free=0)
    assert (tmp_path / BALLAST).stat().st_size == wanted(tmp_path, MIB)
    ensure_ballast(tmp_path, 0, keep_free=0)
    assert not (tmp_path / BALLAST).exists()
