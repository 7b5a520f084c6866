"""Tune glibc's allocator for a node, whose hot paths allocate and free megabyte-sized buffers.

By default glibc hands such buffers back to the kernel as soon as they are freed (unmapping them, or
trimming the heap's top), so the next one faults its pages in and has them zeroed again: on a 16 KiB
publish load that was about a tenth of a node's CPU (docs/history/performance-log.md). Fixed thresholds
keep freed memory in the heap for reuse, up to `TRIM_THRESHOLD_BYTES` of it at its top, and more inside it.

That reuse pool is worth its memory only while the node works: `IdleTrim` gives the free memory back
to the kernel (`malloc_trim`) once the node has gone quiet after a stretch of work. A node holding a
1M-message backlog kept about 170 MB of free heap before (docs/history/performance-log.md).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
"""Only allocations at least this large get pages of their own (glibc's ceiling for its own setting)."""
TRIM_THRESHOLD_BYTES = 128 * 1024 * 1024
"""How much free memory at the top of the heap is kept before it is given back to the kernel."""
QUIET_BYTES_PER_CHECK = 1024 * 1024
"""A node that applied less entry data than this since the last check is quiet."""
WORK_BEFORE_TRIM_BYTES = 16 * 1024 * 1024
"""How much entry data a node applies between two trims at least (a quiet node trims once)."""
CHECK_EVERY_S = 1.0


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name)
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def keep_freed_memory() -> bool:
    """Apply the thresholds; False (and nothing changed) where the C library is not glibc."""
    libc = _glibc()
    if libc is None:
        return False
    applied = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    applied = libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and applied
    if not applied:
        log.warning("could not set the allocator's thresholds; freed buffers go back to the kernel")
    return applied


def release_free_memory() -> bool:
    """Give the heap's free pages back to the kernel (glibc's `malloc_trim(0)`, which also releases whole
    free pages inside the heap); False where the C library is not glibc. ctypes lets go of the GIL for it."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


class IdleTrim:
    """Releases the allocator's free memory once a node that worked has gone quiet.

    `work()` counts the entry data the node applied so far; `run()` asks `due()` every CHECK_EVERY_S and
    releases (with `release`) when less than QUIET_BYTES_PER_CHECK was applied since the previous check
    and at least WORK_BEFORE_TRIM_BYTES since the previous release."""

    def __init__(self, work: Callable[[], int], release: Callable[[], object] = release_free_memory) -> None:
        self._work = work
        self._release = release
        self._seen = work()
        self._released_at = self._seen

    def due(self) -> bool:
        """Whether to release now (and take note of the work done since the previous call)."""
        work = self._work()
        quiet = work - self._seen < QUIET_BYTES_PER_CHECK
        self._seen = work
        if quiet and work - self._released_at >= WORK_BEFORE_TRIM_BYTES:
            self._released_at = work
            return True
        return False

    async def run(self) -> None:
        """Check every CHECK_EVERY_S; a release runs in a worker thread, off the loop."""
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            if self.due():
                await asyncio.to_thread(self._release)
