"""Availability around a node that stops answering or is cut off (docs/decisions/0012).

A node that cannot get a request committed answers 503 once it knows so, instead of holding the request
until the client gives up: a forward to a leader that stopped answering, a publish on a leader cut off
from its followers, a request to a follower cut off from everyone. The deadline is the client's (30 s);
each answer comes within about two election timeouts, with the error code `outcome_unknown` since the
request was sent on and may yet take effect. And the client leaves a frozen leader for the
others, its publish deduplicated when the old leader wakes up with the request still in its socket."""

from __future__ import annotations

import asyncio
import signal

import aiohttp
import pytest
from node_helpers import forwarded, forwarding_over_peers
from support.eventually import eventually

from cli.node_processes import HARNESS_HEADERS, NodeProcess, ProcessCluster, wait_healthy
from quorumq import Client

PATIENT_CLIENT_S = 30.0
PUBLISH = {"messages": [{"body": "x"}], "publisher": "p1", "seq": 1}


async def _leader_and_followers(cluster: ProcessCluster, queue: str) -> tuple[NodeProcess, list[NodeProcess]]:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare(queue, {"x-quorum-initial-group-size": 3})
        await client.publish(queue, "warm-up")  # the group has a leader and every connection is open
        leader = (await client.queue(queue))["leader"]
    return cluster.node(leader), [node for node in cluster.nodes if node.name != leader]


async def _publish(url: str, queue: str) -> tuple[int, dict]:
    timeout = aiohttp.ClientTimeout(total=PATIENT_CLIENT_S)
    async with (
        aiohttp.ClientSession(timeout=timeout, headers=HARNESS_HEADERS) as session,
        session.post(f"{url}/api/queues/{queue}/messages", json=PUBLISH) as answer,
    ):
        return answer.status, await answer.json()


class _Frozen:
    """SIGSTOP `nodes` for the block; SIGCONT and wait until the cluster is healthy again after it."""

    def __init__(self, cluster: ProcessCluster, nodes: list[NodeProcess]) -> None:
        self.cluster = cluster
        self.nodes = nodes

    def __enter__(self) -> None:
        for node in self.nodes:
            node.signal(signal.SIGSTOP)

    def __exit__(self, *exc: object) -> None:
        for node in self.nodes:
            node.signal(signal.SIGCONT)
        wait_healthy(self.cluster.nodes)


@pytest.mark.faults
async def test_a_request_forwarded_to_a_frozen_leader_is_answered_503_once_another_leads(
    cluster: ProcessCluster,
) -> None:
    leader, followers = await _leader_and_followers(cluster, "fwd")
    await forwarding_over_peers(followers[0].url, "fwd")
    with _Frozen(cluster, [leader]):
        status, body = await _publish(followers[0].url, "fwd")
    assert (status, body["error"]) == (503, "outcome_unknown"), body  # the frozen leader holds it unread
    assert body.get("leader") != leader.name
    assert forwarded(followers[0].url, "http") == 0  # it went over the peer transport


@pytest.mark.faults
async def test_a_publish_forwarded_over_the_peer_transport_is_503_once_the_link_to_the_leader_drops(
    cluster: ProcessCluster,
) -> None:
    """The frozen leader holds the frame unread; killed, its connections close, and the forwarding node
    gives the publish up at once, before any election could name another leader."""
    leader, followers = await _leader_and_followers(cluster, "dropped")
    url = followers[0].url
    await forwarding_over_peers(url, "dropped")
    sent_before = forwarded(url, "peer")
    leader.signal(signal.SIGSTOP)
    answer = asyncio.ensure_future(_publish(url, "dropped"))
    await eventually(
        lambda: answer.done() or forwarded(url, "peer") > sent_before,
        "the frame on its way to the frozen leader",
    )
    assert not answer.done(), answer.result()
    leader.kill()
    status, body = await answer
    assert (status, body["error"]) == (503, "outcome_unknown"), body
    assert body["reason"] == f"the link to {leader.name} closed before its answer came", body


@pytest.mark.faults
async def test_isolated_leader_answers_503_for_a_publish_it_cannot_commit(cluster: ProcessCluster) -> None:
    leader, followers = await _leader_and_followers(cluster, "alone")
    with _Frozen(cluster, followers):
        status, body = await _publish(leader.url, "alone")
    assert (status, body["error"]) == (503, "outcome_unknown"), body  # in its log: a later leader may keep it


@pytest.mark.faults
async def test_isolated_follower_answers_503_fast(cluster: ProcessCluster) -> None:
    leader, followers = await _leader_and_followers(cluster, "cut")
    with _Frozen(cluster, [leader, followers[1]]):
        status, body = await _publish(followers[0].url, "cut")
    assert (status, body["error"]) == (503, "outcome_unknown"), body  # forwarded to the frozen leader


@pytest.mark.faults
async def test_client_fails_over_from_a_frozen_leader_and_its_publish_is_enqueued_once(
    cluster: ProcessCluster,
) -> None:
    leader, followers = await _leader_and_followers(cluster, "once")
    nodes = [leader.url, *(node.url for node in followers)]
    async with Client(nodes, timeout=PATIENT_CLIENT_S) as client:
        with _Frozen(cluster, [leader]):
            ids = await client.publish("once", "after the freeze")
            assert (await client.queue("once"))["leader"] != leader.name
        assert (await client.publish("once", "after the thaw")) == [ids[0] + 1]
        assert (await client.queue("once"))["messages"] == 3  # the warm-up, and each of these once
