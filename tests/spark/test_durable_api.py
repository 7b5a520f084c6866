"""The HTTP endpoints the Spark connector relies on (durable consumers, browsing) against a real cluster."""

from __future__ import annotations

import pytest

from cli.node_processes import ProcessCluster
from quorumq import Client, QuorumqError, SequencePosition


async def test_checkout_numbers_messages_and_every_node_reads_them_back(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("durable-log")
        await client.publish("durable-log", [f"m{i}" for i in range(10)])
        assert await client.consume("durable-log", durable=True, name="job") == "job"
        assert await client.durable_checkout("durable-log", "job", 6) == SequencePosition(0, 6, 12)
        for url in cluster.urls:
            async with Client([url]) as one_node:
                rows = await one_node.consumer_log("durable-log", "job", 2, 6)
                assert [(d.seq, d.text) for d in rows] == [(i, f"m{i}") for i in range(2, 6)]
        stats = await client.queue("durable-log")
        assert (stats["messages_ready"], stats["messages_unacknowledged"]) == (4, 6)


async def test_settle_below_is_idempotent_and_a_settled_range_cannot_be_read(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("durable-settle")
        await client.publish("durable-settle", ["a", "b", "c"])
        await client.consume("durable-settle", durable=True, name="job")
        await client.durable_checkout("durable-settle", "job", 3)
        assert await client.durable_settle("durable-settle", "job", 2) == SequencePosition(2, 3)
        assert await client.durable_settle("durable-settle", "job", 2) == SequencePosition(2, 3)
        with pytest.raises(QuorumqError) as gap:
            await client.consumer_log("durable-settle", "job", 0, 3)
        assert gap.value.status == 409
        with pytest.raises(QuorumqError) as beyond:
            await client.durable_settle("durable-settle", "job", 4)
        assert beyond.value.status == 409
        assert (await client.queue("durable-settle"))["messages"] == 1


async def test_cancelling_a_durable_consumer_returns_its_messages(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("durable-cancel")
        await client.publish("durable-cancel", ["a", "b"])
        await client.consume("durable-cancel", durable=True, name="job")
        await client.durable_checkout("durable-cancel", "job", 2)
        await client.cancel("durable-cancel", "job")
        stats = await client.queue("durable-cancel")
        assert (stats["messages_ready"], stats["messages_unacknowledged"]) == (2, 0)
        with pytest.raises(QuorumqError) as gone:
            await client.consumer_log("durable-cancel", "job", 0, 1)
        assert gone.value.status == 404


async def test_a_durable_registration_rejects_a_timeout(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("durable-bad")
        with pytest.raises(QuorumqError) as bad:
            await client.consume("durable-bad", durable=True, name="job", timeout_ms=100)
        assert bad.value.status == 400


async def test_checkout_since_a_time_and_within_a_byte_budget(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("durable-filtered")
        await client.publish("durable-filtered", [b"0123456789"] * 4)
        future = await client.durable_checkout("durable-filtered", "job", 10, since="2999-01-01T00:00:00")
        assert future == SequencePosition(0, 0)
        two = await client.durable_checkout("durable-filtered", "job", 10, since=0, max_bytes=25)
        assert two == SequencePosition(0, 2, taken_bytes=20)
        one = await client.durable_checkout("durable-filtered", "job", 10, max_bytes=1)
        assert one == SequencePosition(0, 3, taken_bytes=10)
        with pytest.raises(QuorumqError) as bad:
            await client.durable_checkout("durable-filtered", "job", 1, max_bytes=0)
        assert bad.value.status == 400


async def test_browsing_pages_through_a_queue_by_id_from_every_node_without_consuming_it(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("browsed")
        ids = await client.publish("browsed", [f"m{i}" for i in range(7)])
        await client.durable_checkout("browsed", "job", 2)  # checked out messages are listed too
        stats = await client.queue("browsed")
        assert stats["next_id"] == ids[-1] + 1
        for url in cluster.urls:
            async with Client([url]) as one_node:
                page = await one_node.browse("browsed", ids[1], to=stats["next_id"], limit=4)
                assert [(d.id, d.text) for d in page] == [(ids[n], f"m{n}") for n in range(1, 5)]
                rest = await one_node.browse("browsed", page[-1].id + 1)
                assert [d.text for d in rest] == ["m5", "m6"]
        after = await client.queue("browsed")
        assert (after["messages_ready"], after["messages_unacknowledged"]) == (5, 2)
        assert [d.delivery_count for d in await client.browse("browsed")] == [0] * 7
