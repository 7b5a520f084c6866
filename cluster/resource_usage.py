"""What a node uses of the machine, as its resource alarms read it: free disk on the filesystem of its
data directory, its resident memory, and the memory it may use (the machine's, or its cgroup's limit
when lower: a container's)."""

from __future__ import annotations

import os
import resource
import shutil
from dataclasses import dataclass
from pathlib import Path

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


@dataclass(frozen=True)
class ResourceUsage:
    """One reading: bytes free on the data directory's filesystem (for this process: not the root's
    reserve), resident bytes, and the bytes of memory this node may use."""

    disk_free: int
    memory_used: int
    memory_total: int


def memory_used() -> int:
    """Resident memory in bytes (Linux /proc), else the peak resident size."""
    try:
        resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return resident_pages * _PAGE_BYTES


def memory_total() -> int:
    """The machine's memory, or the cgroup's limit when one is set and lower."""
    total = os.sysconf("SC_PHYS_PAGES") * _PAGE_BYTES
    for limit_file in _CGROUP_LIMITS:
        try:
            text = limit_file.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def disk_free(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the filesystem holding `path` (0 when unreadable)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0


def read_usage(data_dir: Path) -> ResourceUsage:
    """What this process uses now, its data directory being `data_dir`."""
    return ResourceUsage(disk_free(data_dir), memory_used(), memory_total())
