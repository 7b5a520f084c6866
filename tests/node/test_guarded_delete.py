"""DELETE ?if_empty / ?if_unused is decided in the queue's log, never from a stale replica (issue 17,
finding 4).

The stale replica is made deterministic with a one-way partition (`RaftGate`): the queue's leader can
no longer reach the metadata leader's replica of the queue, so that replica never hears of a publish,
while the metadata and the queue keep their majorities.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from node_helpers import local_queues
from raft_gate import RaftGate

from cli.node_processes import (
    HARNESS_HEADERS,
    NodeProcess,
    ProcessCluster,
    plan_cluster,
    wait_healthy,
    wait_until,
)
from quorumq import Client, ConflictError, NotFoundError


async def declare_led_by(node: NodeProcess, queue: str) -> None:
    """Declare `queue` through `node` (client-local placement prefers it) and make sure it leads it."""
    async with Client([node.url]) as client:
        await client.declare(queue)
        if (await client.queue(queue))["leader"] != node.name:
            await client.transfer_leader(queue, node.name)


@dataclass
class Gated:
    """3 nodes behind gates: `meta` leads the metadata, `leader` the test's queue, `other` neither."""

    cluster: ProcessCluster
    gates: dict[str, RaftGate]
    meta: NodeProcess
    leader: NodeProcess
    other: NodeProcess

    async def declare_led_by_leader(self, queue: str) -> None:
        """Declare `queue` on all three nodes, led by `leader`, and wait until `meta` follows that leader."""
        await declare_led_by(self.leader, queue)

        def meta_follows() -> bool:
            seen = local_queues(self.meta.url).get(queue, {})
            return seen.get("leader") == self.leader.name

        await asyncio.to_thread(wait_until, meta_follows, 30, f"{self.meta.name} to follow {queue}'s leader")

    def partition(self) -> None:
        """From now on the queue leader's Raft traffic to the metadata leader is lost."""
        self.gates[self.meta.name].drop_from(self.leader.name)


@pytest.fixture
async def gated(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Gated]:
    nodes = plan_cluster(3, tmp_path)
    gates = {node.name: RaftGate(node) for node in nodes}
    for node in nodes:
        gates[node.name].advertise()
        node.seeds = [f"{n.name}@{gates[n.name].address}" for n in nodes]
    for gate in gates.values():
        await gate.start()
    cluster = ProcessCluster(nodes)
    try:
        for node in nodes:
            node.start()
        await asyncio.to_thread(wait_healthy, nodes)
        async with Client(cluster.urls) as client:
            meta = cluster.node((await client.health())["metadata_leader"])
        leader, other = (node for node in nodes if node is not meta)
        yield Gated(cluster, gates, meta, leader, other)
    finally:
        await asyncio.to_thread(cluster.stop)
        for gate in gates.values():
            await gate.stop()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(cluster.log_tails())


@pytest.mark.faults
async def test_rule_an_if_empty_delete_is_refused_though_the_metadata_leaders_replica_is_stale(
    gated: Gated,
) -> None:
    await gated.declare_led_by_leader("kept")
    gated.partition()
    async with Client([gated.leader.url]) as client:
        ids = await client.publish("kept", [str(i) for i in range(5)])
    assert len(ids) == 5
    stale = await asyncio.to_thread(local_queues, gated.meta.url)
    assert stale["kept"]["messages"] == 0, "the metadata leader's replica should not have heard of them"
    async with Client([gated.other.url]) as client:
        with pytest.raises(ConflictError):
            await client.delete_queue("kept", if_empty=True)
    async with Client([gated.leader.url]) as client:
        assert (await client.queue("kept"))["messages"] == 5
        served = await client.get("kept", count=10, ack="auto")
    assert [d.text for d in served] == [str(i) for i in range(5)]


@pytest.mark.faults
async def test_rule_a_sealed_queue_refuses_publishes_and_is_deleted_once_the_metadata_is_reached(
    gated: Gated,
) -> None:
    await gated.declare_led_by_leader("sealed")
    gated.partition()
    async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as session:
        url = f"{gated.other.url}/api/queues/sealed"
        async with session.delete(url, params={"if_empty": "true"}) as answer:
            assert answer.status == 503, await answer.text()  # sealed, but the metadata was out of reach
        async with session.post(f"{url}/messages", json={"messages": [{"body": "late"}]}) as answer:
            assert (answer.status, (await answer.json())["error"]) == (409, "queue_deleting")
    gated.gates[gated.meta.name].heal(gated.leader.name)

    def deleted_everywhere() -> bool:
        return all("sealed" not in local_queues(node.url) for node in gated.cluster.nodes)

    await asyncio.to_thread(wait_until, deleted_everywhere, 30, "the sealed queue to be deleted")
    async with Client(gated.cluster.urls) as client:
        with pytest.raises(NotFoundError):
            await client.queue("sealed")


async def test_rule_guarded_deletes_off_the_metadata_leader_are_decided_by_the_queue_leader(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls) as client:
        meta = (await client.health())["metadata_leader"]
    leader = next(node for node in cluster.nodes if node.name != meta)
    await declare_led_by(leader, "in-use")
    await declare_led_by(leader, "empty")
    async with Client([leader.url]) as client:
        await client.publish("in-use", ["kept"])
        tag = await client.consume("in-use", prefetch=1)
        with pytest.raises(ConflictError):
            await client.delete_queue("in-use", if_unused=True)
        await client.cancel("in-use", tag)
        await client.delete_queue("in-use", if_unused=True)  # unused, though not empty
        await client.delete_queue("empty", if_empty=True, if_unused=True)
        for name in ("in-use", "empty"):
            with pytest.raises(NotFoundError):
                await client.queue(name)
