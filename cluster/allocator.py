"""Tune glibc's allocator for a node, whose hot paths allocate and free megabyte-sized buffers.

By default glibc hands such buffers back to the kernel as soon as they are freed (unmapping them, or
trimming the heap's top), so the next one faults its pages in and has them zeroed again: on a 16 KiB
publish load that was about a tenth of a node's CPU (docs/benchmarks.md). Fixed thresholds keep freed
memory in the heap for reuse, up to `TRIM_THRESHOLD_BYTES` of it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
"""Only allocations at least this large get pages of their own (glibc's ceiling for its own setting)."""
TRIM_THRESHOLD_BYTES = 128 * 1024 * 1024
"""How much free memory at the top of the heap is kept before it is given back to the kernel."""


def keep_freed_memory() -> bool:
    """Apply the thresholds; False (and nothing changed) where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):
        return False
    applied = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    applied = libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and applied
    if not applied:
        log.warning("could not set the allocator's thresholds; freed buffers go back to the kernel")
    return applied
