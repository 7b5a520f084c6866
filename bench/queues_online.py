"""How long a restarted quorumq node takes to have every queue it hosts online again.

The node is stopped gracefully (SIGTERM, `QuorumqCluster.stop_node`) and started again on its data. The
clock runs from starting its process. Two moments are reported, both asked of that node alone:

- healthy: `GET /api/health` answers 200 (a metadata leader known, the node registered);
- online: its health report counts a hosted Raft group for every queue (and the metadata's) and none
  without a known leader or still repairing its log, and then `GET /api/queues?local=true` (each queue
  as this node's own replica reports it) shows every queue with a leader, and every queue that was given
  a message before the restart with that message: each replica here has rejoined its group and applied
  what was committed.

Both are polled every POLL_S up to a deadline (TIMEOUT_S after the start; past it the moment is reported
as not reached); the cheap health report is polled first so that the whole listing is not asked for
every POLL_S while the node is still starting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.quorumq_cluster import QuorumqCluster
from quorumq.auth import resolve_credentials

POLL_S = 0.1
TIMEOUT_S = 120.0  # twelve times issue 40's target
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30.0)


@dataclass(frozen=True)
class Restart:
    """Seconds from starting the node's process until it was healthy, and until every queue was online;
    None when that did not happen within TIMEOUT_S."""

    node: str
    healthy_seconds: float | None
    online_seconds: float | None


async def _get(session: aiohttp.ClientSession, url: str, **params: str) -> Any:
    """The JSON answer of a GET, or None while the node refuses, fails or is not ready."""
    try:
        async with session.get(url, params=params) as response:
            return await response.json() if response.status == 200 else None
    except (aiohttp.ClientError, TimeoutError):
        return None


def _groups_settled(health: Any, queues: int) -> bool:
    return (
        health is not None
        and health["groups_hosted"] >= queues + 1  # the metadata group and one per queue
        and not health["groups_without_leader"]
        and not health["groups_repairing"]
    )


def _all_online(listing: Any, queues: int, with_message: int) -> bool:
    if listing is None:
        return False
    led = [row for row in listing if row.get("leader") is not None]
    return len(led) >= queues and sum(1 for row in led if row.get("messages") == 1) >= with_message


async def _until(check: Callable[[], Awaitable[bool]], deadline: float) -> float | None:
    """Poll the coroutine function `check` every POLL_S until true: the perf_counter it was first true,
    or None once past `deadline`."""
    while not await check():
        if time.perf_counter() > deadline:
            return None
        await asyncio.sleep(POLL_S)
    return time.perf_counter()


async def restart_until_online(
    cluster: QuorumqCluster, index: int, queues: int, with_message: int
) -> Restart:
    """Stop node `index`, start it again, and time it until healthy and until all `queues` queues are
    online on it, `with_message` of them holding the one message each was given."""
    node = cluster.processes.nodes[index]
    await asyncio.to_thread(cluster.stop_node, index)
    started = time.perf_counter()
    await asyncio.to_thread(cluster.start_node, index)
    deadline = started + TIMEOUT_S
    headers = resolve_credentials(None, None, None).headers  # the loopback guest, or QUORUMQ_USER
    async with aiohttp.ClientSession(timeout=REQUEST_TIMEOUT, headers=headers) as session:

        async def healthy() -> bool:
            return await _get(session, f"{node.url}/api/health") is not None

        async def groups_settled() -> bool:
            return _groups_settled(await _get(session, f"{node.url}/api/health"), queues)

        async def online() -> bool:
            listing = await _get(
                session, f"{node.url}/api/queues", local="true", columns="name,leader,messages"
            )
            return _all_online(listing, queues, with_message)

        healthy_at = await _until(healthy, deadline)
        settled_at = await _until(groups_settled, deadline) if healthy_at else None
        online_at = await _until(online, deadline) if settled_at else None
    return Restart(
        node.name,
        healthy_at - started if healthy_at else None,
        online_at - started if online_at else None,
    )
