"""What this node's process uses, as RabbitMQ's `/api/nodes` reports it: memory, file descriptors,
tasks, disk space left, uptime."""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
from pathlib import Path

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def memory_used() -> int:
    """Resident memory in bytes (Linux /proc), else the peak resident size."""
    try:
        resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return resident_pages * _PAGE_BYTES


def file_descriptors_used() -> int:
    """Open file descriptors (sockets included), or 0 where /proc does not tell."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def file_descriptors_total() -> int:
    """The soft limit of open file descriptors."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def tasks_running() -> int:
    """asyncio tasks of the running loop: the nearest thing to RabbitMQ's Erlang process count."""
    return len(asyncio.all_tasks())


def disk_free(path: Path) -> int:
    """Bytes free on the filesystem holding `path` (0 when it cannot be read)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0
