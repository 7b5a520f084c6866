"""End-to-end behaviour of a real 3-node cluster: processes, TCP, RocksDB, SIGKILL."""

from __future__ import annotations

import asyncio

import pytest
from node_helpers import drain, local_queues
from support.eventually import eventually

from cli.node_processes import ProcessCluster as Cluster
from cli.node_processes import wait_healthy, wait_until
from quorumq import Client, QuorumqError


async def test_publish_through_one_node_and_consume_through_another(cluster: Cluster) -> None:
    async with Client([cluster.urls[0]]) as first, Client([cluster.urls[2]]) as third:
        assert await first.declare("orders") is True
        ids = await first.publish("orders", [str(i) for i in range(50)])
        assert len(set(ids)) == 50
        stats = await third.queue("orders")
        assert stats["messages_ready"] == 50
        assert sorted(stats["members"]) == ["node1", "node2", "node3"]
        assert sorted(await drain(third, "orders", 50)) == list(range(50))
        assert (await first.queue("orders"))["messages"] == 0


async def test_publish_retry_with_same_publisher_and_seq_enqueues_once(cluster: Cluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("dedup")
        first = await client.publish("dedup", ["a", "b"], publisher="p1", seq=7)
        again = await client.publish("dedup", ["a", "b"], publisher="p1", seq=7)
        assert first == again
        assert (await client.queue("dedup"))["messages"] == 2


@pytest.mark.faults
async def test_leader_sigkill_during_publish_stream_loses_no_confirmed_message(cluster: Cluster) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("payments")
        leader = cluster.node((await client.queue("payments"))["leader"])
        confirmed: set[int] = set()
        counter = iter(range(10**9))
        stop = asyncio.Event()

        async def publisher() -> None:
            while not stop.is_set():
                values = [next(counter) for _ in range(10)]
                try:
                    await client.publish("payments", [str(v) for v in values])
                except QuorumqError:
                    continue
                confirmed.update(values)

        tasks = [asyncio.create_task(publisher()) for _ in range(4)]
        await eventually(lambda: len(confirmed) >= 300, "300 confirmed publishes", timeout=30)
        leader.kill()
        before_kill = len(confirmed)
        await eventually(
            lambda: len(confirmed) >= before_kill + 300, "300 more confirmed after the kill", timeout=60
        )
        stop.set()
        await asyncio.gather(*tasks)
        new_leader = (await client.queue("payments"))["leader"]
        assert new_leader != leader.name
        leader.start()
        await asyncio.to_thread(wait_healthy, [leader])
        consumed = await drain(client, "payments", len(confirmed), timeout=60)
        assert confirmed - set(consumed) == set(), "confirmed messages were lost"


@pytest.mark.faults
async def test_restarted_follower_catches_up(cluster: Cluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("catchup")
        stats = await client.queue("catchup")
        follower = cluster.node(next(m for m in stats["members"] if m != stats["leader"]))
        follower.kill()
        await client.publish("catchup", [str(i) for i in range(200)])
        follower.start()
        await asyncio.to_thread(wait_healthy, [follower])

        def follower_has_all() -> bool:
            listed = local_queues(follower.url)
            return listed.get("catchup", {}).get("messages") == 200

        await asyncio.to_thread(wait_until, follower_has_all, 30, "the follower to catch up")
        assert sorted(await drain(client, "catchup", 200)) == list(range(200))


@pytest.mark.faults
async def test_whole_cluster_restart_keeps_confirmed_messages_and_queues(cluster: Cluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("durable-a", {"x-max-length": 1000})
        await client.declare("durable-b")
        await client.publish("durable-a", [str(i) for i in range(100)])
        await client.publish("durable-b", ["42"])
    for node in cluster.nodes:
        node.kill()
    for node in cluster.nodes:
        node.start()
    await asyncio.to_thread(wait_healthy, cluster.nodes)
    async with Client(cluster.urls, timeout=30.0) as client:
        queues = {q["name"]: q for q in await client.queues()}
        assert set(queues) == {"durable-a", "durable-b"}
        assert queues["durable-a"]["arguments"]["x-max-length"] == 1000
        assert sorted(await drain(client, "durable-a", 100)) == list(range(100))
        assert await drain(client, "durable-b", 1) == [42]


async def test_consumer_timeout_returns_unacked_messages_with_delivery_count(cluster: Cluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("silent")
        await client.publish("silent", ["1"])
        tag = await client.consume("silent", prefetch=1, timeout_ms=500)
        first = await client.deliveries("silent", tag, max=1, wait=5)
        assert [d.delivery_count for d in first] == [0]
        # the consumer now stays silent; its timeout declares it down through the log
        second_tag = await client.consume("silent", prefetch=1)
        again = await client.deliveries("silent", second_tag, max=1, wait=15)
        assert len(again) == 1
        assert again[0].id == first[0].id
        assert again[0].delivery_count == 1
        assert again[0].headers["x-delivery-count"] == 1
        assert again[0].redelivered


@pytest.mark.slow
async def test_200_queues_on_3_nodes_declare_publish_consume(cluster: Cluster) -> None:
    names = [f"q{i:03d}" for i in range(200)]
    limit = asyncio.Semaphore(16)
    async with Client(cluster.urls, timeout=60.0) as client:

        async def roundtrip(name: str) -> bytes:
            async with limit:
                await client.declare(name, {"x-queue-leader-locator": "balanced"})
                await client.publish(name, [name])
                got = await client.get(name, count=1, ack="auto")
                return got[0].body

        bodies = await asyncio.gather(*(roundtrip(n) for n in names))
        assert [b.decode() for b in bodies] == names
        listed = await client.queues()
        assert len(listed) == 200
        leaders = {q["leader"] for q in listed}
        assert leaders <= {"node1", "node2", "node3"} and len(leaders) == 3
