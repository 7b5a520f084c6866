"""The seeds' backlog controls (issue 40, slice 4) on a real 3-node cluster, through the CLI, the
client over its streams, HTTP and policies: `x-max-unacked` caps what the queue hands out until acks
come; a policy's discard mark drops low-priority messages above it, counted; `x-dequeue-interval-ms`
paces hand-outs and `x-dequeue-window` holds them outside the window; a publish with `wait` on a full
reject-publish queue is taken once a consumer makes room."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import aiohttp
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from cli.app import cli as quorumq
from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from quorumq import Client, Message


def cli(node: str, *args: str) -> tuple[int, str]:
    """`quorumq --node NODE --formatter json ARGS...`: its exit code and output (stderr included)."""
    result = CliRunner().invoke(quorumq, ["--node", node, "--formatter", "json", *args])
    return result.exit_code, result.output


async def _publishes_waiting(cluster: ProcessCluster, queue: str) -> float:
    """`quorumq_queue_publishes_waiting` of `queue`, summed over the nodes' /metrics."""
    waiting = 0.0
    async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as session:
        for url in cluster.urls:
            async with session.get(f"{url}/metrics") as answer:
                for family in text_string_to_metric_families(await answer.text()):
                    if family.name == "quorumq_queue_publishes_waiting":
                        waiting += sum(s.value for s in family.samples if s.labels.get("queue") == queue)
    return waiting


async def test_max_unacked_caps_what_a_stream_consumer_and_gets_hold(cluster: ProcessCluster) -> None:
    code, out = cli(cluster.urls[1], "declare", "capped", "--arg", "x-max-unacked=2")
    assert code == 0, out
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.publish("capped", [f"m{i}" for i in range(6)])
        async with client.subscribe("capped", prefetch=10) as consumer:
            held = []
            async for message in consumer:
                held.append(message)
                if len(held) == 2:
                    break
            assert len(await client.get("capped", count=5)) == 0  # at the cap: nothing for a get either
            stats = await client.queue("capped")
            assert (stats["messages_unacknowledged"], stats["messages_ready"]) == (2, 4)
            await consumer.ack(held)
            async for message in consumer:
                await message.ack()
                held.append(message)
                if len(held) == 6:
                    break
        assert sorted(bytes(m.body) for m in held) == [f"m{i}".encode() for i in range(6)]


async def test_a_policys_discard_mark_drops_low_priorities_and_counts_them(cluster: ProcessCluster) -> None:
    definition = {"discard-mark": 2, "discard-below-priority": 5}
    code, out = cli(cluster.urls[0], "policies", "set", "lossy", "^lossy$", json.dumps(definition))
    assert code == 0, out
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("lossy")
        await client.publish("lossy", ["a", "b"])
        while (await client.queue("lossy"))["policy"] != "lossy":
            await asyncio.sleep(0.1)
        ids = await client.publish("lossy", [Message("low", priority=1), Message("high", priority=9)])
        assert len(ids) == 2  # both answered as taken
        stats = await client.queue("lossy")
        assert stats["messages"] == 3 and stats["dropped"]["discarded"] == 1, stats
        bodies = {bytes(d.body) for d in await client.get("lossy", count=10, ack="auto")}
        assert bodies == {b"a", b"b", b"high"}


async def test_dequeue_interval_paces_and_a_closed_window_holds_hand_outs(cluster: ProcessCluster) -> None:
    now = datetime.now(UTC)
    closed = f"{now + timedelta(hours=2):%H:%M}-{now + timedelta(hours=3):%H:%M}"
    open_now = f"{now - timedelta(hours=1):%H:%M}-{now + timedelta(hours=1):%H:%M}"
    code, out = cli(
        cluster.urls[2], "policies", "set", "window", "^windowed$", json.dumps({"dequeue-window": closed})
    )
    assert code == 0, out
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("paced", {"x-dequeue-interval-ms": 3_600_000})
        await client.declare("windowed")
        while (await client.queue("windowed"))["policy"] != "window":
            await asyncio.sleep(0.1)
        for queue in ("paced", "windowed"):
            await client.publish(queue, ["x", "y"])
        assert len(await client.get("paced", count=2, ack="auto")) == 1  # one per interval
        assert await client.get("paced", count=2, ack="auto") == []
        assert await client.get("windowed", count=2, ack="auto") == []  # outside its window
        code, out = cli(
            cluster.urls[1],
            "policies",
            "set",
            "window",
            "^windowed$",
            json.dumps({"dequeue-window": open_now}),
        )
        assert code == 0, out
        while not (got := await client.get("windowed", count=2, ack="auto")):
            await asyncio.sleep(0.1)
        assert {bytes(d.body) for d in got} <= {b"x", b"y"}


async def test_a_waiting_publish_to_a_full_queue_is_taken_once_a_consumer_makes_room(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("full", {"x-max-length": 1, "x-overflow": "reject-publish"})
        await client.publish("full", ["first"])
        waiting = asyncio.create_task(client.publish("full", ["second"], wait_ms=20_000))
        while await _publishes_waiting(cluster, "full") == 0:
            await asyncio.sleep(0.05)
        assert not waiting.done()
        assert [bytes(d.body) for d in await client.get("full", ack="auto")] == [b"first"]
        assert len(await waiting) == 1
        assert [bytes(d.body) for d in await client.get("full", ack="auto")] == [b"second"]
