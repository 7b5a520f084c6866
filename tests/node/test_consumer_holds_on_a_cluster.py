"""Holding deliveries on a real 3-node cluster (issue 22): a handler slower than the consumer timeout
keeps its message inside `message.process()` (the client touches it), one that does not touch is ended
with 410 and its message goes back as a failure, a touch carries on through a new leader, and the CLI
holds a batch through slow work."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time

import aiohttp
import pytest
from click.testing import CliRunner
from support.eventually import eventually

from cli.main import cli as quorumq
from cli.node_processes import ProcessCluster, wait_healthy
from quorumq import Client, ConsumerEndedError, Message
from quorumq.auth import basic_header

TIMEOUT_MS = 1500  # the queue's x-consumer-timeout
WORK_S = 4.0  # longer than two timeouts


def cli(node: str, *args: str) -> tuple[int, str]:
    """`quorumq --node NODE --formatter json ARGS...`: its exit code and output."""
    result = CliRunner().invoke(quorumq, ["--node", node, "--formatter", "json", *args])
    return result.exit_code, result.stdout


async def _drain_one(client: Client, queue: str) -> list:
    got = await client.get(queue, count=10, ack="auto")
    return [(m.text, m.delivery_count) for m in got]


async def ready(client: Client, queue: str, count: int) -> bool:
    """Whether `queue`'s stats show `count` messages ready."""
    return (await client.queue(queue))["messages_ready"] == count


async def test_process_keeps_a_slow_handlers_message_past_the_consumer_timeout(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("slow", {"x-consumer-timeout": TIMEOUT_MS})
        await client.publish("slow", ["order-1"])
        handled = []
        async with client.subscribe("slow", prefetch=1) as sub, contextlib.aclosing(aiter(sub)) as stream:
            async for message in stream:
                async with message.process():
                    await asyncio.sleep(WORK_S)  # the slow work process() keeps the message through
                handled.append((message.text, message.delivery_count))
                break
        stats = await client.queue("slow")
    assert handled == [("order-1", 0)]
    assert (stats["messages"], stats["consumers"]) == (0, 0)


async def test_rule_an_untouched_delivery_past_the_consumer_timeout_is_taken_back(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0, stream=False) as client:
        await client.declare("careless", {"x-consumer-timeout": TIMEOUT_MS})
        await client.publish("careless", ["order-2"])
        tag = await client.consume("careless", prefetch=1)
        (message,) = await client.deliveries("careless", tag, max=1, wait=5.0)
        await eventually(
            lambda: ready(client, "careless", 1), "the consumer to time out", timeout=30, interval=0.2
        )
        with pytest.raises(ConsumerEndedError) as ended:
            await message.ack()
        assert (ended.value.status, ended.value.code) == (410, "consumer_timeout")
        with pytest.raises(ConsumerEndedError):
            await client.deliveries("careless", tag, max=1, wait=0.1)
        await client.cancel("careless", tag)  # gone already: nothing to undo
        assert await _drain_one(client, "careless") == [("order-2", 1)]  # counted as a failure


async def test_a_touch_carries_on_through_a_new_leader(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls, timeout=30.0, stream=False) as client:
        await client.declare("moving", {"x-consumer-timeout": 3000})
        await client.publish("moving", ["order-3"])
        tag = await client.consume("moving", prefetch=1)
        (message,) = await client.deliveries("moving", tag, max=1, wait=5.0)
        stats = await client.queue("moving")
        successor = next(m for m in stats["members"] if m != stats["leader"])
        await client.transfer_leader("moving", successor)
        started = time.monotonic()
        while time.monotonic() - started < 7.0:  # more than two timeouts, on the new leader
            assert await message.touch() == 3000
            await asyncio.sleep(0.5)  # the slow work the touches are for
        await message.ack()
        after = await client.queue("moving")
    assert after["leader"] == successor
    assert (after["messages"], after["consumers"]) == (0, 1)
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.cancel("moving", tag)


def test_the_cli_consumer_touches_a_batch_through_slow_work(cluster: ProcessCluster) -> None:
    run = functools.partial(cli, cluster.urls[0])
    assert run("declare", "cli-slow", "--arg", "x-consumer-timeout=1000")[0] == 0
    assert run("publish", "cli-slow", "a", "b")[0] == 0
    code, out = run("consume", "cli-slow", "--count", "2", "--work", "3", "--timeout", "10")
    assert code == 0, out
    assert [json.loads(line)["delivery_count"] for line in out.splitlines()] == [0, 0]
    assert run("publish", "cli-slow", "c")[0] == 0
    code, out = run("consume", "cli-slow", "--count", "1", "--work", "3", "--no-touch", "--timeout", "10")
    assert code != 0  # its ack came after the consumer timeout
    code, out = run("get", "cli-slow")
    assert code == 0 and json.loads(out)[0]["delivery_count"] == 1


def test_rule_a_consumer_working_across_a_change_of_leader_stays_through_touches(tmp_path) -> None:
    """A consumer working on a delivery across a change of leader for longer than the idle timeout,
    without a poll but touching it (as `message.process()` does at half its hold): the new leader, which
    gives it a whole idle timeout from when it took over, does not end it, and its ack lands."""
    cluster = ProcessCluster.start(tmp_path, env={"QUORUMQ_CONSUMER_IDLE_TIMEOUT_MS": "1000"})

    async def scenario() -> dict:
        async with Client(cluster.urls, timeout=30.0, stream=False) as client:
            await client.declare("reoffered")
            await client.publish("reoffered", ["order-4"])
            tag = await client.consume("reoffered", prefetch=1)
            (message,) = await client.deliveries("reoffered", tag, max=1, wait=5.0)
            stats = await client.queue("reoffered")
            successor = next(m for m in stats["members"] if m != stats["leader"])
            await message.touch()
            await client.transfer_leader("reoffered", successor)
            for _ in range(10):  # the work: three idle timeouts without a poll, touched every 0.3 s
                await asyncio.sleep(0.3)
                await message.touch()
            await message.ack()
            return await client.queue("reoffered")

    try:
        after = asyncio.run(scenario())
    finally:
        cluster.stop()
    assert (after["messages"], after["consumers"]) == (0, 1)


async def test_rule_a_message_settles_as_the_consumer_that_received_it(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("retagged", {"x-consumer-timeout": 1000})
        await client.publish("retagged", ["order-5"])
        async with client.subscribe("retagged", prefetch=1) as sub:
            batches = sub.batches()  # not kept held: batches() leaves that to the caller
            (old,) = await anext(batches)
            first_tag = sub.tag
            (again,) = await anext(batches)  # the consumer timed out; the subscription carries on anew
            assert (again.id, again.delivery_count, sub.tag != first_tag) == (old.id, 1, True)
            with pytest.raises(ConsumerEndedError):
                await old.ack()  # as the ended consumer: not taken for the new one's
            await again.ack()
            await batches.aclose()
        assert (await client.queue("retagged"))["messages"] == 0


async def test_a_nack_delay_and_the_queues_delayed_retry_hold_a_message_back(cluster: ProcessCluster) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("later", {"x-delayed-retry-type": "failed", "x-delayed-retry-min": 1500})
        await client.publish("later", ["order-6"])
        tag = await client.consume("later", prefetch=1)
        (message,) = await client.deliveries("later", tag, max=1, wait=5.0)
        await message.nack()  # a failure: the queue's delayed retry holds it back 1.5 s
        stats = await client.queue("later")
        assert (stats["messages_ready"], stats["messages_delayed"]) == (0, 1)
        started = time.monotonic()
        (again,) = await client.deliveries("later", tag, max=1, wait=10.0)
        waited = time.monotonic() - started
        assert (again.id, again.delivery_count) == (message.id, 1)
        await again.nack(failed=False, delay_ms=0)  # a plain return, at once whatever the queue says
        (third,) = await client.deliveries("later", tag, max=1, wait=5.0)
        assert (third.id, third.delivery_count, third.acquired_count) == (message.id, 1, 2)
        await third.nack(delay_ms=800)
        assert (await client.queue("later"))["messages_delayed"] == 1
        (fourth,) = await client.deliveries("later", tag, max=1, wait=10.0)
        await fourth.ack()
    assert waited > 1.0  # a delivery waited out most of the delay


def test_the_cli_nacks_with_a_delay(cluster: ProcessCluster) -> None:
    run = functools.partial(cli, cluster.urls[0])
    assert run("declare", "cli-later")[0] == 0
    assert run("publish", "cli-later", "a")[0] == 0
    code, out = run(
        "consume", "cli-later", "--count", "1", "--nack", "--nack-delay", "60000", "--timeout", "5"
    )
    assert code == 0, out
    code, out = run("queues")
    (row,) = [q for q in json.loads(out) if q["name"] == "cli-later"]
    assert (row["messages_ready"], row["messages_delayed"]) == (0, 1)


async def test_a_delayed_publish_waits_then_keeps_its_place_whatever_node_took_it(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("scheduled")
        stats = await client.queue("scheduled")
        follower = next(node for node in cluster.nodes if node.name != stats["leader"])
        async with Client([follower.url], timeout=30.0, stream=False) as through_a_follower:
            await through_a_follower.publish("scheduled", ["first", Message("later", delay_ms=1500), "third"])
        async with aiohttp.ClientSession(headers={"Authorization": basic_header("guest", "guest")}) as http:
            not_before = int(time.time() * 1000) + 60_000
            body = {"messages": [{"body": "tomorrow", "not_before": not_before}]}
            async with http.post(f"{follower.url}/api/queues/scheduled/messages", json=body) as answer:
                assert answer.status == 201, await answer.text()
            bad = {"messages": [{"body": "x", "delay": 5, "not_before": not_before}]}
            async with http.post(f"{follower.url}/api/queues/scheduled/messages", json=bad) as answer:
                assert answer.status == 400
        stats = await client.queue("scheduled")
        assert (stats["messages_ready"], stats["messages_delayed"]) == (2, 2)
        await eventually(
            lambda: ready(client, "scheduled", 3), "the delayed message to come due", timeout=30, interval=0.2
        )
        taken = await client.get("scheduled", count=3, ack="auto")
    assert [m.text for m in taken] == ["first", "later", "third"]  # its FIFO place, by id


def test_the_cli_publishes_with_a_delay(cluster: ProcessCluster) -> None:
    run = functools.partial(cli, cluster.urls[0])
    assert run("declare", "cli-scheduled")[0] == 0
    assert run("publish", "cli-scheduled", "a", "b", "--delay", "60000")[0] == 0
    code, out = run("queues")
    assert code == 0, out
    (row,) = [q for q in json.loads(out) if q["name"] == "cli-scheduled"]
    assert (row["messages"], row["messages_ready"], row["messages_delayed"]) == (2, 0, 2)


async def test_delayed_messages_survive_a_killed_leader_and_a_whole_cluster_restart(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("patient", {"x-delayed-retry-type": "failed", "x-delayed-retry-min": 60_000})
        await client.publish("patient", [Message("scheduled", delay_ms=4000), "now"])
        (now,) = await client.get("patient", count=1, ack="manual")
        await now.nack()  # a failure: the queue's delayed retry holds it back a minute
        assert (await client.queue("patient"))["messages_delayed"] == 2
        leader = (await client.queue("patient"))["leader"]
    cluster.node(leader).kill()  # the new leader rebuilds both from its log
    for node in cluster.nodes:
        if node.name != leader:
            node.stop()
    for node in cluster.nodes:
        node.start()  # every node replays (a whole-cluster restart)
    wait_healthy(cluster.nodes)
    async with Client(cluster.urls, timeout=30.0) as client:

        async def back() -> dict:  # a leader answers with both still waiting, or the first due
            stats = await client.queue("patient")
            assert stats["messages"] == 2, stats
            return stats

        stats = await eventually(back, "the queue to come back", timeout=30, interval=0.2)
        assert stats["messages_delayed"] + stats["messages_ready"] == 2
        await eventually(  # the 4 s delay runs out
            lambda: ready(client, "patient", 1), "the delayed publish to come due", timeout=30, interval=0.2
        )
        taken = await client.get("patient", count=2, ack="auto")
        stats = await client.queue("patient")
    assert [m.text for m in taken] == ["scheduled"]  # the nacked one waits out its minute
    assert (stats["messages"], stats["messages_delayed"]) == (1, 1)
