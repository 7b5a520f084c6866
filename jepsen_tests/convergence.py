"""Replica convergence: once the cluster is idle, every member's own copy of a queue reports the same state.

Each node answers `GET /api/queues` from its local replica for the queues it hosts, so asking every
member directly (no failover) compares the replicas themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from quorumq import Client, QuorumqError

COMPARED_FIELDS = ("messages", "messages_ready", "messages_unacknowledged", "message_bytes", "consumers")


@dataclass(frozen=True)
class Convergence:
    """Each queue's replica states by node, and whether they all agree."""

    replicas: dict[str, dict[str, dict[str, Any] | None]]

    @property
    def agreed(self) -> bool:
        """True when, for every queue, every member reported the same compared fields."""
        return all(_agree(states) for states in self.replicas.values())

    def disagreements(self) -> list[str]:
        """One line per queue whose replicas differ."""
        return [f"{queue}: {states}" for queue, states in self.replicas.items() if not _agree(states)]


def _agree(states: dict[str, dict[str, Any] | None]) -> bool:
    views = list(states.values())
    return bool(views) and all(v is not None for v in views) and all(v == views[0] for v in views)


async def replica_states(node_urls: dict[str, str], queues: Sequence[str]) -> Convergence:
    """Ask every node for its local view of each queue it is a member of."""
    listings = await asyncio.gather(*(_local_queues(url) for url in node_urls.values()))
    by_node = dict(zip(node_urls, listings, strict=True))
    replicas: dict[str, dict[str, dict[str, Any] | None]] = {}
    for queue in queues:
        members: list[str] = next(
            (q["members"] for listing in listings for q in listing.values() if q["name"] == queue), []
        )
        replicas[queue] = {
            member: _compared(by_node.get(member, {}).get(queue)) for member in sorted(members)
        }
    return Convergence(replicas)


async def wait_for_convergence(
    node_urls: dict[str, str], queues: Sequence[str], timeout: float, poll: float = 0.5
) -> Convergence:
    """Poll until the replicas agree or `timeout` passes; returns the last states seen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        states = await replica_states(node_urls, queues)
        if states.agreed or loop.time() >= deadline:
            return states
        await asyncio.sleep(poll)


def _compared(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    if stats is None or "messages" not in stats:
        return None
    return {name: stats.get(name) for name in COMPARED_FIELDS}


async def _local_queues(url: str) -> dict[str, dict[str, Any]]:
    try:
        async with Client([url], timeout=3.0, connect_timeout=1.0) as client:
            return {q["name"]: q for q in await client.queues()}
    except QuorumqError:
        return {}
