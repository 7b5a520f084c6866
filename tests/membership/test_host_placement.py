"""Several nodes per host (one per core, decision 0015): a queue's replicas land on distinct hosts, on
declare and when its group grows. Six real node processes play three hosts with the loopback addresses
127.0.0.1-3 (node1 and node2 on the first)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from membership_helpers import FAST_RECONCILE, local_queues

from cli.node_processes import ProcessCluster, wait_until
from quorumq import Client

HOSTS = 3


@pytest.fixture
def two_per_host(tmp_path: Path) -> Iterator[ProcessCluster]:
    """Six nodes on three loopback hosts; node logs are printed when the test fails."""
    running = ProcessCluster.start(tmp_path, 6, env=FAST_RECONCILE, hosts=HOSTS)
    try:
        yield running
    finally:
        running.stop()
        print(running.log_tails())


def hosts_of(cluster: ProcessCluster, members: list[str]) -> list[str]:
    return [cluster.node(m).host for m in members]


async def test_replicas_of_declared_and_grown_queues_are_on_distinct_hosts(
    two_per_host: ProcessCluster,
) -> None:
    url = two_per_host.urls[0]
    async with Client(two_per_host.urls) as client:
        for i in range(6):
            await client.declare(f"placed-{i}", {"x-queue-leader-locator": "balanced"})
        await client.declare("grown", {"x-quorum-initial-group-size": 1, "x-quorum-target-group-size": 3})
    queues = local_queues(url)
    for i in range(6):
        members = queues[f"placed-{i}"]["members"]
        assert len(members) == 3 and len(set(hosts_of(two_per_host, members))) == HOSTS, members
    leaders = {queues[f"placed-{i}"]["members"][0] for i in range(6)}
    assert len(leaders) == 6  # balanced still spreads the leaders over every node

    def grown() -> bool:
        return len(local_queues(url)["grown"]["members"]) == 3

    await asyncio.to_thread(wait_until, grown, 30, "'grown' to reach 3 replicas", two_per_host.nodes)
    members = local_queues(url)["grown"]["members"]
    assert len(set(hosts_of(two_per_host, members))) == HOSTS, members
