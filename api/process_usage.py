"""What this node's process uses, as RabbitMQ's `/api/nodes` reports it, beside what its resource
alarms read (`cluster.resource_alarms`): file descriptors and tasks."""

from __future__ import annotations

import asyncio
import os
import resource


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
