"""Helpers shared by the tests that drive a real cluster."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.eventually import eventually

from cli.node_processes import HARNESS_HEADERS, NodeProcess, ProcessCluster, wait_until
from cluster.replication.entry_codec import QUEUE_OP_VERSION
from quorumq import Client, SyncClient

ANNOUNCED_TIMEOUT_S = 10.0  # every node tells its peers what it reads each second


def running_cluster(
    tmp_path: Path, request: pytest.FixtureRequest, count: int, env: dict[str, str] | None = None
) -> Iterator[ProcessCluster]:
    """A fresh cluster of `count` nodes (extra QUORUMQ_* settings in `env`) for a fixture to yield from;
    node logs are printed when the test fails."""
    running = ProcessCluster.start(tmp_path, count=count, env=env)
    yield running
    running.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(running.log_tails())


def local_queues(url: str) -> dict[str, dict]:
    """A node's own view: GET /api/queues?local=true answers hosted queues from the local replica."""
    request = urllib.request.Request(f"{url}/api/queues?local=true", headers=HARNESS_HEADERS)
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
    async with Client([url], timeout=10.0) as client:

        async def over_peers() -> bool:
            if forwarded(url, "peer"):
                return True
            await client.publish(queue, "until forwarded over the peer transport")
            return False

        await eventually(over_peers, f"{url} to forward a publish over the peer transport", timeout=timeout)


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


def writes_newest_queue_ops(node: NodeProcess) -> bool:
    """True once `node`'s health report says it writes the newest queue operation version."""
    with SyncClient([node.url], timeout=1.0) as client:
        return client.health()["formats"]["queue_operations"]["writes"] == QUEUE_OP_VERSION


def every_node_writes_the_newest_queue_ops(cluster: ProcessCluster) -> None:
    """Wait until every node heard from the others that they read the newest queue operation version."""
    for node in cluster.nodes:
        what = f"{node.name} to write version {QUEUE_OP_VERSION}"
        wait_until(lambda node=node: writes_newest_queue_ops(node), ANNOUNCED_TIMEOUT_S, what, [node])
