"""A publish made to a node that does not lead the queue, on real nodes over real TCP: it travels to the
leader over the peer transport (`api/publishing.py`) and is answered once the leader confirmed
it, a resend through another node is answered with the same ids, and a publish too large for a frame on
the Raft link is forwarded over HTTP as before."""

from __future__ import annotations

import aiohttp
from node_helpers import forwarded, forwarding_over_peers

from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from quorumq import Client

LARGE = "x" * (2 << 20)  # over MAX_PEER_FORWARD_BYTES


async def _post(url: str, queue: str, payload: dict) -> tuple[int, dict]:
    async with (
        aiohttp.ClientSession(headers=HARNESS_HEADERS) as session,
        session.post(f"{url}/api/queues/{queue}/messages", json=payload) as answer,
    ):
        return answer.status, await answer.json()


async def _declared(cluster: ProcessCluster, queue: str) -> tuple[str, list[str]]:
    """Declare `queue` on every node; its leader's name, and the other nodes' URLs once each forwards
    publishes to it over the peer transport."""
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare(queue, {"x-quorum-initial-group-size": 3})
        leader = (await client.queue(queue))["leader"]
    followers = [node.url for node in cluster.nodes if node.name != leader]
    for url in followers:
        await forwarding_over_peers(url, queue)
    return leader, followers


async def test_a_publish_to_a_follower_is_confirmed_by_the_leader_over_the_peer_transport(
    cluster: ProcessCluster,
) -> None:
    leader, (first, second) = await _declared(cluster, "forwarded")
    before = {url: forwarded(url, "peer") for url in (first, second)}
    publish = {"messages": [{"body": "once", "headers": {"h": 1}}], "publisher": "pf", "seq": 1}
    status, answer = await _post(first, "forwarded", publish)
    assert (status, answer["duplicate"]) == (201, False), answer
    resent = await _post(second, "forwarded", publish)  # a client's resend through another node
    assert resent == (201, {"ids": answer["ids"], "duplicate": True})
    assert {url: forwarded(url, "peer") - count for url, count in before.items()} == {first: 1, second: 1}
    assert forwarded(first, "http") == forwarded(second, "http") == 0
    async with Client([cluster.node(leader).url], timeout=30.0) as client:
        rows = await client.browse("forwarded", limit=1000)
    assert [(m.body, m.headers) for m in rows if m.id in answer["ids"]] == [(b"once", {"h": 1})]


async def test_a_publish_too_large_for_a_frame_on_the_raft_link_is_forwarded_over_http(
    cluster: ProcessCluster,
) -> None:
    _, (follower, _) = await _declared(cluster, "large")
    status, answer = await _post(follower, "large", {"messages": [{"body": LARGE}]})
    assert status == 201, answer
    assert forwarded(follower, "http") == 1
