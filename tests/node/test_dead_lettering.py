"""Dead-lettering on a real 3-node cluster: reasons, x-death, at-least-once through failures."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from node_helpers import drain, every_node_writes_the_newest_queue_ops
from support.eventually import eventually

from cli.node_processes import HARNESS_HEADERS, wait_healthy
from cli.node_processes import ProcessCluster as Cluster
from quorumq import Client, Delivery, Message

AT_LEAST_ONCE = {"x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"}


async def collect(client: Client, queue: str, count: int, timeout: float = 20.0) -> list[Delivery]:
    """Consume and ack until `count` deliveries arrived (or the time is up)."""
    tag = await client.consume(queue, prefetch=max(count, 1))
    got: list[Delivery] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        batch = await client.deliveries(queue, tag, max=count, wait=1.0)
        if batch:
            await client.ack(queue, tag, [d.id for d in batch])
            got.extend(batch)
    await client.cancel(queue, tag)
    return got


def only_death(delivery: Delivery) -> dict[str, Any]:
    deaths = delivery.headers["x-death"]
    assert len(deaths) == 1
    return deaths[0]


async def test_message_nacked_past_its_delivery_limit_lands_in_the_dlq_once_with_x_death(
    cluster: Cluster,
) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("poison-dlq")
        await client.declare("work", {"x-delivery-limit": 2, "x-dead-letter-queue": "poison-dlq"})
        await client.publish("work", [Message("bad order", headers={"order": 7})])
        tag = await client.consume("work", prefetch=1)
        counts = []
        while len(counts) < 3:
            for delivery in await client.deliveries("work", tag, max=1, wait=5):
                counts.append(delivery.delivery_count)
                await client.nack("work", tag, [delivery.id], requeue=True)
        assert counts == [0, 1, 2]
        (dead,) = await collect(client, "poison-dlq", 1)
        assert dead.body == b"bad order"
        assert dead.headers["order"] == 7
        death = only_death(dead)
        assert (death["queue"], death["reason"], death["count"]) == ("work", "delivery_limit", 1)
        assert dead.headers["x-first-death-queue"] == "work"
        assert dead.headers["x-first-death-reason"] == "delivery_limit"
        stats = await client.queue("work")
        assert stats["messages"] == 0 and stats["dead_lettered"] == {"delivery_limit": 1}
        assert await collect(client, "poison-dlq", 1, timeout=2) == []


async def test_rule_a_plain_return_never_reaches_the_delivery_limit_and_a_reject_keeps_its_reason(
    cluster: Cluster,
) -> None:
    """Nacked with failed=false five times past a limit of 1, a message is still delivered (acquired
    counting up, failures not); rejected with a reason, it lands in the DLQ with reason-text in x-death."""
    every_node_writes_the_newest_queue_ops(cluster)  # the fields of queue operations version 3
    async with Client(cluster.urls) as client:
        await client.declare("patient-dlq")
        await client.declare("patient", {"x-delivery-limit": 1, "x-dead-letter-queue": "patient-dlq"})
        await client.publish("patient", [Message("order 7")])
        tag = await client.consume("patient", prefetch=1)
        seen: list[tuple[int, int, bool]] = []
        while len(seen) < 7:
            for delivery in await client.deliveries("patient", tag, max=1, wait=5):
                seen.append((delivery.delivery_count, delivery.acquired_count, delivery.redelivered))
                if len(seen) < 7:
                    await client.nack("patient", tag, [delivery.id], failed=False)
                else:
                    await client.nack("patient", tag, [delivery.id], requeue=False, reason="no such customer")
        assert seen == [(0, 0, False)] + [(0, n, True) for n in range(1, 7)]
        (dead,) = await collect(client, "patient-dlq", 1)
        death = only_death(dead)
        assert (death["queue"], death["reason"], death["reason-text"]) == (
            "patient",
            "rejected",
            "no such customer",
        )
        assert "x-acquired-count" not in dead.headers  # the dead letter starts afresh in the DLQ


async def test_rule_a_reject_reason_survives_at_least_once_dead_lettering_from_a_stream_nack(
    cluster: Cluster,
) -> None:
    every_node_writes_the_newest_queue_ops(cluster)
    async with Client(cluster.urls) as client:
        await client.declare("why-dlq")
        await client.declare("why", {"x-dead-letter-queue": "why-dlq", **AT_LEAST_ONCE})
        await client.publish("why", ["a", "b"])
        async with client.subscribe("why", prefetch=2) as subscription:
            taken = 0
            async for message in subscription:
                await message.nack(requeue=False, reason=f"bad {message.text}")
                taken += 1
                if taken == 2:
                    break
        dead = {d.body.decode(): only_death(d) for d in await collect(client, "why-dlq", 2)}
        assert {body: death["reason-text"] for body, death in dead.items()} == {"a": "bad a", "b": "bad b"}
        assert all(death["reason"] == "rejected" for death in dead.values())


async def test_rejected_expired_and_maxlen_messages_carry_their_reason(cluster: Cluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("reasons-dlq")
        await client.declare("rejecting", {"x-dead-letter-queue": "reasons-dlq"})
        await client.declare("expiring", {"x-dead-letter-queue": "reasons-dlq", "x-message-ttl": 100})
        await client.declare("bounded", {"x-dead-letter-queue": "reasons-dlq", "x-max-length": 2})
        await client.publish("rejecting", ["r"])
        (got,) = await client.get("rejecting", count=1, ack="manual")
        await client.nack_got("rejecting", [got.id], requeue=False)
        await client.publish("expiring", ["e"])
        await client.publish("bounded", ["b1", "b2", "b3"])
        dead = {d.body.decode(): only_death(d) for d in await collect(client, "reasons-dlq", 3)}
        assert dead["r"]["reason"] == "rejected" and dead["r"]["queue"] == "rejecting"
        assert dead["e"]["reason"] == "expired" and dead["e"]["queue"] == "expiring"
        assert dead["b1"]["reason"] == "maxlen" and dead["b1"]["queue"] == "bounded"
        assert sorted(d.body for d in await client.get("bounded", count=5, ack="auto")) == [b"b2", b"b3"]


async def test_at_least_once_waits_for_a_missing_target_then_delivers(cluster: Cluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("source", {**AT_LEAST_ONCE, "x-dead-letter-queue": "late-dlq"})
        await client.publish("source", [str(i) for i in range(5)])
        got = await client.get("source", count=5, ack="manual")
        await client.nack_got("source", [d.id for d in got], requeue=False)
        stats = await client.queue("source")
        assert stats["messages_dlx"] == 5 and stats["messages"] == 5
        await client.declare("late-dlq")
        dead = await collect(client, "late-dlq", 5, timeout=30)
        assert sorted(int(d.body) for d in dead) == list(range(5))
        assert all(only_death(d)["reason"] == "rejected" for d in dead)
        assert (await client.queue("source"))["messages"] == 0


@pytest.mark.faults
async def test_at_least_once_survives_source_leader_sigkill_without_loss(cluster: Cluster) -> None:
    total = 300
    async with Client(cluster.urls, timeout=30) as client:
        await client.declare("sink")
        await client.declare("src", {**AT_LEAST_ONCE, "x-dead-letter-queue": "sink"})
        await client.publish_all("src", [str(i) for i in range(total)])
        leader = cluster.node((await client.queue("src"))["leader"])
        rejected = 0
        while rejected < total:
            got = await client.get("src", count=100, ack="manual")
            await client.nack_got("src", [d.id for d in got], requeue=False)
            rejected += len(got)
        leader.kill()
        leader.start()
        await asyncio.to_thread(wait_healthy, [leader])
        arrived = await drain(client, "sink", total, timeout=60)
        missing = set(range(total)) - set(arrived)
        source = await client.queue("src")
        assert not missing, f"dead letters missing: {sorted(missing)[:20]}; source: {source}"
        duplicates = len(arrived) - len(set(arrived))
        print(f"duplicates after leader SIGKILL: {duplicates}")
        assert (await client.queue("src"))["messages"] == 0


async def test_at_most_once_drops_dead_letters_when_the_target_does_not_exist(cluster: Cluster) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("lossy", {"x-dead-letter-queue": "nowhere"})
        await client.publish("lossy", ["gone"])
        (got,) = await client.get("lossy", count=1, ack="manual")
        await client.nack_got("lossy", [got.id], requeue=False)
        assert (await client.queue("lossy"))["messages"] == 0
        await client.declare("nowhere")
        assert await collect(client, "nowhere", 1, timeout=2) == []


async def test_leaving_at_least_once_at_runtime_drops_pending_dead_letters_and_says_so(
    cluster: Cluster,
) -> None:
    async with Client(cluster.urls) as client:
        await client.declare("switch", {**AT_LEAST_ONCE, "x-dead-letter-queue": "absent"})
        await client.publish("switch", ["a", "b", "c"])
        got = await client.get("switch", count=3, ack="manual")
        await client.nack_got("switch", [d.id for d in got], requeue=False)
        assert (await client.queue("switch"))["messages_dlx"] == 3
        async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as http:
            answer = await http.patch(
                f"{cluster.urls[2]}/api/queues/switch",
                json={"arguments": {"x-dead-letter-strategy": "at-most-once"}},
            )
            assert answer.status == 200, await answer.text()
            body = await answer.json()
        assert body["arguments"]["x-dead-letter-strategy"] == "at-most-once"
        assert body["messages"] == 0
        assert body["dropped"] == {"dead_letter_strategy_changed": 3}


async def test_reading_a_dead_letter_queue_from_a_time_sees_only_later_dead_letters(cluster: Cluster) -> None:
    async with Client(cluster.urls) as client:
        # unlimited: a message put back goes to the tail (the loop below reaches the next one) and is
        # never dead-lettered past the default limit however often it is put back
        await client.declare("aged-dlq", {"x-delivery-limit": -1})
        await client.declare("aged", {"x-dead-letter-queue": "aged-dlq"})

        async def dead_letter(body: str) -> int:
            await client.publish("aged", [body])
            (got,) = await client.get("aged", count=1, ack="manual")
            await client.nack_got("aged", [got.id], requeue=False)
            while True:  # wait until it is in the dead-letter queue, and read when it got there
                (seen,) = await client.get("aged-dlq", count=1, ack="manual", since=0) or [None]
                if seen is not None and seen.body == body.encode():
                    await client.nack_got("aged-dlq", [seen.id], requeue=True)
                    assert seen.published_at is not None
                    return seen.published_at
                if seen is not None:
                    await client.nack_got("aged-dlq", [seen.id], requeue=True)

        early_at = await dead_letter("early")
        since = datetime.fromtimestamp((early_at + 1) / 1000, UTC).isoformat()
        reader = await client.consume("aged-dlq", prefetch=10, since=since)
        late_at = await dead_letter("late")
        assert late_at > early_at
        read = await client.deliveries("aged-dlq", reader, max=10, wait=10)
        assert [d.body for d in read] == [b"late"]
        await client.ack("aged-dlq", reader, [d.id for d in read])
        await client.cancel("aged-dlq", reader)
        assert await client.get("aged-dlq", count=10, ack="auto", since=late_at + 1) == []
        rest = await client.get("aged-dlq", count=10, ack="auto")
        assert [d.body for d in rest] == [b"early"]


async def declare_led_by(url: str, node: str, queue: str, arguments: dict[str, Any] | None = None) -> None:
    """Declare `queue` through the node at `url` (client-local placement prefers it) and make sure `node`
    leads it."""
    async with Client([url]) as client:
        await client.declare(queue, arguments)
        if (await client.queue(queue))["leader"] != node:
            await client.transfer_leader(queue, node)


@pytest.mark.parametrize("strategy", [{}, AT_LEAST_ONCE], ids=["at-most-once", "at-least-once"])
async def test_a_dead_letter_keeps_its_body_encoding_and_priority_on_a_target_led_by_another_node(
    cluster: Cluster, strategy: dict[str, str]
) -> None:
    source, target = cluster.nodes[0], cluster.nodes[1]
    await declare_led_by(target.url, target.name, "encoded-dlq")
    await declare_led_by(
        source.url, source.name, "encoded", {**strategy, "x-dead-letter-queue": "encoded-dlq"}
    )
    async with Client(cluster.urls) as client:
        await client.publish("encoded", [Message("héllo", priority=4), b"\x00\xff"])
        got = await client.get("encoded", count=2, ack="manual")
        await client.nack_got("encoded", [d.id for d in got], requeue=False)
    rows: list[dict[str, Any]] = []
    async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as http:

        async def both() -> bool:
            async with http.post(f"{target.url}/api/queues/encoded-dlq/get", json={"count": 2}) as answer:
                assert answer.status == 200, await answer.text()
                rows.extend(await answer.json())
            return len(rows) >= 2

        await eventually(both, "both dead letters", timeout=20, interval=0.1)
    assert sorted((row["encoding"], row["body"], row.get("priority", 0)) for row in rows) == [
        ("base64", "AP8=", 0),
        ("utf8", "héllo", 4),
    ]


@pytest.mark.parametrize("strategy", [{}, AT_LEAST_ONCE], ids=["at-most-once", "at-least-once"])
async def test_dead_letters_keep_their_priority_on_a_target_the_same_node_leads(
    cluster: Cluster, strategy: dict[str, str]
) -> None:
    node = cluster.nodes[0]
    await declare_led_by(node.url, node.name, "ranked-dlq")
    await declare_led_by(node.url, node.name, "ranked", {**strategy, "x-dead-letter-queue": "ranked-dlq"})
    async with Client([node.url]) as client:
        await client.publish("ranked", [Message("low"), Message("high", priority=8)])
        got = await client.get("ranked", count=2, ack="manual")
        await client.nack_got("ranked", [d.id for d in got], requeue=False)

        async def arrived() -> bool:
            return (await client.queue("ranked-dlq"))["messages_ready"] >= 2

        await eventually(arrived, "the dead letters", timeout=20, interval=0.1)
        taken = await client.get("ranked-dlq", count=2, ack="auto")
    assert [(d.text, d.priority) for d in taken] == [("high", 8), ("low", 0)]
