"""Helpers shared by the tests that drive a real cluster."""

from __future__ import annotations

import json
import re
import time
import urllib.request

from cli.node_processes import HARNESS_HEADERS
from quorumq import Client


def local_queues(url: str) -> dict[str, dict]:
    """A node's own view: GET /api/queues answers hosted queues from the local replica."""
    request = urllib.request.Request(f"{url}/api/queues", headers=HARNESS_HEADERS)
    with urllib.request.urlopen(request, timeout=5) as answer:
        return {q["name"]: q for q in json.load(answer)}


def forwarded(url: str, via: str) -> int:
    """How many requests the node at `url` passed on to another node `via` "peer" (the peer transport)
    or "http" (its metrics)."""
    request = urllib.request.Request(f"{url}/metrics", headers=HARNESS_HEADERS)
    with urllib.request.urlopen(request, timeout=5) as answer:
        found = re.search(rf'^quorumq_forwarded_total{{via="{via}"}} (\S+)$', answer.read().decode(), re.M)
    return int(float(found.group(1))) if found else 0


async def forwarding_over_peers(url: str, queue: str, timeout: float = 20.0) -> None:
    """Publish through the node at `url` (which does not lead `queue`) until a publish went to the leader
    over the peer transport: peers say they serve requests once a second after their links come up."""
    deadline = time.monotonic() + timeout
    async with Client([url], timeout=10.0) as client:
        while forwarded(url, "peer") == 0:
            assert time.monotonic() < deadline, f"{url} never forwarded a publish over the peer transport"
            await client.publish(queue, "until forwarded over the peer transport")


async def drain(client: Client, queue: str, expected: int, timeout: float = 30.0) -> list[int]:
    """Consume and ack until `expected` distinct bodies arrived or time runs out.

    Returns every body received as an int, duplicates included (at-least-once paths may repeat).
    """
    tag = await client.consume(queue, prefetch=500)
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while len(set(seen)) < expected and time.monotonic() < deadline:
        batch = await client.deliveries(queue, tag, max=500, wait=1.0)
        if batch:
            await client.ack(queue, tag, [d.id for d in batch])
            seen.extend(int(d.body) for d in batch)
    await client.cancel(queue, tag)
    return seen
