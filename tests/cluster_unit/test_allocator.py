"""The node's allocator tuning takes effect on glibc (this project's Linux target), and a node that went
quiet after work gives the allocator's free memory back to the kernel, once."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.queues.allocator import (
    QUIET_BYTES_PER_CHECK,
    WORK_BEFORE_TRIM_BYTES,
    IdleTrim,
    keep_freed_memory,
)

glibc_only = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="mallopt and malloc_trim are glibc's"
)
MIB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]  # where the script imports `cluster` from


@glibc_only
def test_thresholds_are_applied_on_glibc() -> None:
    assert keep_freed_memory() is True


_FREE_AND_RELEASE = """
from pathlib import Path
from cluster.queues.allocator import keep_freed_memory, release_free_memory

def resident():
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096

keep_freed_memory()  # freed buffers stay in the heap (up to 128 MiB at its top, any amount inside it)
buffers, pinned = [], []
for _ in range(256):
    buffers.append(b"x" * 2**20)  # below the mmap threshold: heap memory, every page written
    pinned.append(b"y" * 1024)  # a live allocation after each keeps the heap from shrinking on its own
# The pins may land in holes left by start-up; this one is too large for any, so it lies above every
# buffer: freed, they cannot join the heap's top, which glibc would trim at once (past 128 MiB) itself.
fence = b"f" * 2**21
del buffers
before = resident()
assert release_free_memory()
print(before - resident())
"""


@glibc_only
def test_released_free_memory_leaves_the_process(tmp_path: Path) -> None:
    # a fresh interpreter: the test runner's own heap layout may already hand such buffers back
    script = tmp_path / "free_and_release.py"
    script.write_text(_FREE_AND_RELEASE)
    released = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert int(released) >= 128 * MIB


def test_a_quiet_node_releases_once_after_enough_work_and_never_while_busy() -> None:
    applied = [0]
    trim = IdleTrim(lambda: applied[0], release=lambda: None)
    assert not trim.due()  # quiet, but no work since it started
    for _ in range(WORK_BEFORE_TRIM_BYTES // QUIET_BYTES_PER_CHECK + 1):
        applied[0] += QUIET_BYTES_PER_CHECK  # busy every check
        assert not trim.due()
    assert trim.due()  # the first quiet check after enough work
    assert not trim.due()  # still quiet, nothing new to give back
    applied[0] += QUIET_BYTES_PER_CHECK - 1  # a trickle is quiet, but too little work since the release
    assert not trim.due()
    applied[0] += WORK_BEFORE_TRIM_BYTES  # one busy check
    assert not trim.due()
    assert trim.due()
