"""Memory per queued message and the time a node holding that backlog takes to restart and serve again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bench.drivers import Cluster, Driver
from bench.resources import rss_bytes

Fill = Callable[[str, int, int], Awaitable[None]]
"""Declare a queue afresh and put (count) confirmed messages of (body_size) bytes in it."""

BACKLOG_QUEUE = "bench-backlog"
SETTLE_S = 2.0
SERVE_TIMEOUT_S = 600.0
POLL_S = 0.1


@dataclass(frozen=True)
class BacklogResult:
    """RSS growth per queued message (queue's home node and all nodes) and the home node's restart time."""

    messages: int
    body_size: int
    home_bytes_per_message: float
    cluster_bytes_per_message: float
    restart_seconds: float


def _rss_by_node(cluster: Cluster) -> dict[str, int]:
    return {name: rss_bytes(pid) for name, pid in cluster.pids().items()}


async def _serves_backlog(driver: Driver, home: int, count: int) -> bool:
    try:
        return await driver.queue_length(BACKLOG_QUEUE, home) >= count
    except Exception:  # a node still starting refuses or fails in broker-specific ways
        return False


async def measure_backlog(
    driver: Driver, fill: Fill, cluster: Cluster, *, count: int, body_size: int
) -> BacklogResult:
    """Fill one queue (declared on node 0, through the broker's fastest client) with `count` messages,
    compare RSS, then restart node 0; `driver` asks for the queue's length and deletes it.

    The restart time runs from starting the stopped node until a request to that node alone reports
    the whole backlog (the answer may come from the queue's new leader through it)."""
    home_name = next(iter(cluster.pids()))
    before = _rss_by_node(cluster)
    await fill(BACKLOG_QUEUE, count, body_size)
    await asyncio.sleep(SETTLE_S)  # let background flushes finish before reading RSS
    after = _rss_by_node(cluster)
    await asyncio.to_thread(cluster.stop_node, 0)
    started = time.perf_counter()
    await asyncio.to_thread(cluster.start_node, 0)
    deadline = started + SERVE_TIMEOUT_S
    while not await _serves_backlog(driver, 0, count):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"node 0 did not serve {count} messages within {SERVE_TIMEOUT_S:.0f}s")
        await asyncio.sleep(POLL_S)
    restart = time.perf_counter() - started
    await driver.delete(BACKLOG_QUEUE)
    return BacklogResult(
        messages=count,
        body_size=body_size,
        home_bytes_per_message=(after[home_name] - before[home_name]) / count,
        cluster_bytes_per_message=(sum(after.values()) - sum(before.values())) / count,
        restart_seconds=restart,
    )
