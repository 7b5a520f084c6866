"""Memory per queued message and the time a node holding that backlog takes to restart and serve again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bench.drivers import Cluster, Driver
from bench.resources import UsageSampler, rss_bytes

Fill = Callable[[str, int, int], Awaitable[None]]
"""Declare a queue afresh and put (count) confirmed messages of (body_size) bytes in it."""

BACKLOG_QUEUE = "bench-backlog"
SETTLE_S = 2.0
SERVE_TIMEOUT_S = 600.0
POLL_S = 0.1
MIB = 2**20


@dataclass(frozen=True)
class BacklogResult:
    """RSS growth per queued message (queue's home node and all nodes) and the home node's restart time,
    with the RSS behind them: per node before and after the fill, and peaks while filling and while the
    restarted home node comes back (from its start until it serves)."""

    messages: int
    body_size: int
    home_bytes_per_message: float
    cluster_bytes_per_message: float
    restart_seconds: float
    fill_seconds: float
    rss_before: dict[str, int]
    rss_after: dict[str, int]
    fill_peak_rss: dict[str, int]
    restart_peak_rss: dict[str, int]
    rss_serving: dict[str, int]

    def rss_summary(self) -> str:
        """Per node, in MiB: before -> after the fill (its peak), peak through the restart, when serving."""

        def mib(rss: dict[str, int], name: str) -> str:
            return f"{rss.get(name, 0) / MIB:,.0f}"

        return "; ".join(
            f"{name} {mib(self.rss_before, name)} -> {mib(self.rss_after, name)} (fill peak "
            f"{mib(self.fill_peak_rss, name)}), restart peak {mib(self.restart_peak_rss, name)}, "
            f"serving {mib(self.rss_serving, name)}"
            for name in self.rss_before
        )


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
    the whole backlog (the answer may come from the queue's new leader through it). Every node's RSS is
    sampled every 0.1 s through the fill and through the restart, for their peaks."""
    home_name = next(iter(cluster.pids()))
    before = _rss_by_node(cluster)
    filling = time.perf_counter()
    with UsageSampler(cluster.pids()) as fill_sampler:
        await fill(BACKLOG_QUEUE, count, body_size)
    fill_seconds = time.perf_counter() - filling
    await asyncio.sleep(SETTLE_S)  # let background flushes finish before reading RSS
    after = _rss_by_node(cluster)
    await asyncio.to_thread(cluster.stop_node, 0)
    started = time.perf_counter()
    await asyncio.to_thread(cluster.start_node, 0)
    deadline = started + SERVE_TIMEOUT_S
    with UsageSampler(cluster.pids()) as restart_sampler:  # the restarted node under its new pid
        while not await _serves_backlog(driver, 0, count):
            if time.perf_counter() > deadline:
                raise TimeoutError(f"node 0 did not serve {count} messages within {SERVE_TIMEOUT_S:.0f}s")
            await asyncio.sleep(POLL_S)
        restart = time.perf_counter() - started
    serving = _rss_by_node(cluster)
    await driver.delete(BACKLOG_QUEUE)
    return BacklogResult(
        messages=count,
        body_size=body_size,
        home_bytes_per_message=(after[home_name] - before[home_name]) / count,
        cluster_bytes_per_message=(sum(after.values()) - sum(before.values())) / count,
        restart_seconds=restart,
        fill_seconds=fill_seconds,
        rss_before=before,
        rss_after=after,
        fill_peak_rss=fill_sampler.peak_rss,
        restart_peak_rss=restart_sampler.peak_rss,
        rss_serving=serving,
    )
