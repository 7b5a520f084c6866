"""The client on the streaming connection (its default), on real nodes: publishes and subscriptions
travel over the stream; a stream dropped under pipelined publishes leaves each one enqueued exactly
once (resent with its publisher and seq, as over HTTP); a subscription carries on with its consumer on
the new leader after a leader change and after its node is killed."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import urllib.request

import pytest

from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from quorumq import Client, QuorumqError

PATIENT_S = 30.0


def _stream_operations(url: str, op: str) -> int:
    """How many `op` operations the node at `url` received on streams (its metrics)."""
    request = urllib.request.Request(f"{url}/metrics", headers=HARNESS_HEADERS)
    with urllib.request.urlopen(request, timeout=5) as answer:
        found = re.search(
            rf'^quorumq_stream_operations_total{{op="{op}"}} (\S+)$', answer.read().decode(), re.M
        )
    return int(float(found.group(1))) if found else 0


async def _declared(cluster: ProcessCluster, queue: str) -> str:
    """Declare `queue` on three replicas; the name of its leader."""
    async with Client(cluster.urls, timeout=PATIENT_S, stream=False) as client:
        await client.declare(queue, {"x-quorum-initial-group-size": 3})
        await client.publish(queue, b"warm-up")
        return str((await client.queue(queue))["leader"])


async def test_publishes_and_subscriptions_use_the_stream_by_default_and_http_when_told(
    one_node: ProcessCluster,
) -> None:
    url = one_node.urls[0]
    async with Client([url]) as client:
        await client.declare("default")
        ids = await client.publish_all("default", [b"%d" % n for n in range(50)], batch=10)
        assert ids == list(range(ids[0], ids[0] + 50))
        got = []
        async with client.subscribe("default", prefetch=20) as subscription:
            async for batch in subscription.batches():
                got.extend(message.body for message in batch)
                await subscription.ack(batch)
                if len(got) == 50:
                    break
        assert got == [b"%d" % n for n in range(50)]
    assert _stream_operations(url, "publish") == 5
    assert (_stream_operations(url, "consume"), _stream_operations(url, "cancel")) == (1, 1)
    assert _stream_operations(url, "ack") >= 3  # at least one per delivery of up to 20
    async with Client([url], stream=False) as client:
        await client.publish("default", b"over http")
    assert _stream_operations(url, "publish") == 5


@pytest.mark.faults
async def test_pipelined_publishes_through_a_node_killed_midway_are_each_enqueued_once(
    cluster: ProcessCluster,
) -> None:
    leader = await _declared(cluster, "dropped")
    follower = next(node for node in cluster.nodes if node.name != leader)
    others = [node.url for node in cluster.nodes if node is not follower]
    bodies = [b"%d" % n for n in range(600)]
    async with Client([follower.url, *others], timeout=PATIENT_S) as client:
        async with client.publisher("dropped", window=50, batch=1) as publisher:
            confirms = []
            for n, body in enumerate(bodies):
                confirms.append(await publisher.send(body))
                if n == 200:  # many in flight on the follower's stream when it dies
                    follower.kill()
        ids = [confirm.result() for confirm in confirms]
        stored = {m.id: m.body for m in await client.browse("dropped", limit=10000)}
    assert len(set(ids)) == len(bodies)
    assert [stored[i] for i in ids] == bodies
    assert sorted(stored.values()) == sorted([b"warm-up", *bodies])  # none twice, none invented


async def _consume_all(client: Client, queue: str, expected: int, during: asyncio.Event) -> list[bytes]:
    """Iterate a subscription (prefetch 10), acking each batch, until `expected` distinct bodies came;
    `during` is set once the first 30 arrived. (Acks are not resent, as over HTTP: a nack resent after the
    first one was applied would return a message again.)"""
    got: list[bytes] = []
    async with client.subscribe(queue, prefetch=10) as subscription:
        async for batch in subscription.batches():
            got.extend(message.body for message in batch)
            with contextlib.suppress(QuorumqError):  # an ack lost with its leader: delivered again
                await subscription.ack(batch)
            if len(got) >= 30:
                during.set()
            if len(set(got)) >= expected:
                return got
    raise AssertionError("the subscription ended")


async def test_a_subscription_carries_on_with_its_consumer_on_the_new_leader(cluster: ProcessCluster) -> None:
    leader = await _declared(cluster, "moving")
    successor = next(node.name for node in cluster.nodes if node.name != leader)
    async with Client(cluster.urls, timeout=PATIENT_S) as client:
        await client.publish_all("moving", [b"%d" % n for n in range(200)])
        halfway = asyncio.Event()
        consuming = asyncio.ensure_future(_consume_all(client, "moving", 201, halfway))
        await asyncio.wait_for(halfway.wait(), PATIENT_S)
        await client.transfer_leader("moving", successor)
        got = await asyncio.wait_for(consuming, PATIENT_S)
        stats = await client.queue("moving")
    assert set(got) == {b"warm-up", *(b"%d" % n for n in range(200))}
    assert (stats["leader"], stats["messages"], stats["consumers"]) == (successor, 0, 0)
    assert _stream_operations(cluster.node(successor).url, "consume") == 1  # it resumed there


@pytest.mark.faults
async def test_a_subscription_carries_on_after_its_node_is_killed(cluster: ProcessCluster) -> None:
    leader = await _declared(cluster, "killed")
    survivors = [node.url for node in cluster.nodes if node.name != leader]
    async with Client([cluster.node(leader).url, *survivors], timeout=PATIENT_S) as client:
        await client.publish_all("killed", [b"%d" % n for n in range(200)])
        halfway = asyncio.Event()
        consuming = asyncio.ensure_future(_consume_all(client, "killed", 201, halfway))
        await asyncio.wait_for(halfway.wait(), PATIENT_S)
        cluster.node(leader).signal(signal.SIGKILL)
        got = await asyncio.wait_for(consuming, 2 * PATIENT_S)
        stats = await client.queue("killed")
    assert set(got) == {b"warm-up", *(b"%d" % n for n in range(200))}
    assert stats["leader"] != leader
    assert (stats["messages"], stats["consumers"]) == (0, 0)


async def test_a_node_stops_cleanly_while_clients_hold_streams_to_it_rule_streams_close_on_shutdown(
    one_node: ProcessCluster,
) -> None:
    """SIGTERM stops a node whose clients hold open streams (a subscription too) by itself: its streams
    are closed on shutdown rather than waited for, so the harness's 15 s grace (and Docker's 10 s) never
    turns a clean stop into a SIGKILL, which would skip closing the store."""
    node = one_node.nodes[0]
    async with Client([node.url], timeout=2.0) as client:
        await client.declare("held")
        await client.publish("held", b"on the stream")
        subscription = client.subscribe("held", prefetch=10)
        async for message in subscription:
            assert message.body == b"on the stream"
            break
        assert _stream_operations(node.url, "consume") == 1
        await asyncio.to_thread(node.stop)
        assert node.process is not None and node.process.returncode == 0, node.process.returncode
