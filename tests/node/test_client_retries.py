"""The client's retry policy against real nodes: while the leader of a queue is down and then restarted,
publishes move on from the refused node, retry the 503s of the election with jittered backoff, and
each is enqueued once."""

from __future__ import annotations

import asyncio

import pytest
from node_helpers import drain

from cli.node_processes import ProcessCluster, wait_healthy
from quorumq import Client

PATIENT_S = 30.0


@pytest.mark.faults
async def test_publishes_ride_out_a_leader_restart(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls, timeout=PATIENT_S) as client:
        await client.declare("restart", {"x-quorum-initial-group-size": 3})
        first = await client.publish("restart", "0")
        leader = cluster.node((await client.queue("restart"))["leader"])
    followers = [node.url for node in cluster.nodes if node is not leader]

    leader.kill()
    async with Client([leader.url, *followers], timeout=PATIENT_S) as client:
        # refused by the first node, then answered 503 until the followers elect a leader
        while_down = await client.publish("restart", "1")
        leader.start()
        await asyncio.to_thread(wait_healthy, [leader])
        after = await client.publish("restart", "2")  # the restarted node may answer first again
        assert (await client.queue("restart"))["messages"] == 3
        assert sorted(await drain(client, "restart", 3)) == [0, 1, 2]
    assert len({*first, *while_down, *after}) == 3
