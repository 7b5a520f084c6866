"""The deduplication window by message id on a real 3-node cluster (issue 41, item 6): a message id sent
again over HTTP through a follower, by the client over the stream, and after the leader was killed is
answered with the first message's id and enqueued once; the CLI publishes with an id."""

from __future__ import annotations

import functools
import json

import aiohttp
from click.testing import CliRunner
from support.eventually import eventually

from cli.main import cli as quorumq
from cli.node_processes import ProcessCluster
from quorumq import Client, Message
from quorumq.auth import basic_header

HOUR_MS = 3_600_000


async def test_a_message_id_is_enqueued_once_through_a_follower_the_stream_and_a_new_leader(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("payments", {"x-dedupe-window": HOUR_MS})
        leader = (await client.queue("payments"))["leader"]
        follower = next(node for node in cluster.nodes if node.name != leader)
        async with aiohttp.ClientSession(headers={"Authorization": basic_header("guest", "guest")}) as http:
            url = f"{follower.url}/api/queues/payments/messages"
            first = {"messages": [{"body": "pay 3", "message_id": "pay-1"}, {"body": "pay 4"}]}
            async with http.post(url, json=first) as answer:
                assert answer.status == 201, await answer.text()
                paid = await answer.json()
            assert paid["duplicate"] is False and "duplicates" not in paid
            again = {
                "messages": [
                    {"body": "pay 5", "message_id": "pay-2"},
                    {"body": "pay 3 again", "message_id": "pay-1"},
                ]
            }
            async with http.post(url, json=again) as answer:
                assert answer.status == 201, await answer.text()
                resent = await answer.json()
            assert resent["duplicates"] == [1] and resent["ids"][1] == paid["ids"][0]
            assert resent["duplicate"] is False
            clash = {"messages": [{"body": "x", "message_id": "a", "headers": {"x-amqp-message-id": "b"}}]}
            async with http.post(url, json=clash) as answer:
                assert answer.status == 400, await answer.text()
        over_the_stream = await client.publish("payments", [Message("pay 3, third time", message_id="pay-1")])
        assert over_the_stream == [paid["ids"][0]]

        cluster.node(leader).kill()  # the new leader rebuilds the window from its log

        async def new_leader() -> bool:  # a failed read: no leader known yet, or the killed node was asked
            return (await client.queue("payments"))["leader"] not in (None, leader)

        await eventually(new_leader, "a new leader", timeout=30, interval=0.2)
        after_failover = await client.publish(
            "payments", [Message("pay 5 again", message_id="pay-2"), Message("pay 6", message_id="pay-3")]
        )
        assert after_failover[0] == resent["ids"][0] and after_failover[1] > resent["ids"][1]
        cluster.node(leader).start()
        stats = await client.queue("payments")
        assert (stats["messages"], stats["dedupe_ids"], stats["dedupe_refused"]) == (4, 3, 3)
        taken = await client.get("payments", count=10, ack="auto")
    assert [m.text for m in taken] == ["pay 3", "pay 4", "pay 5", "pay 6"]
    assert taken[0].headers["x-amqp-message-id"] == "pay-1"


def test_the_cli_publishes_with_a_message_id(cluster: ProcessCluster) -> None:
    run = functools.partial(CliRunner().invoke, quorumq)
    node = ["--node", cluster.urls[0], "--formatter", "json"]
    assert run([*node, "declare", "cli-dedupe", "--arg", f"x-dedupe-window={HOUR_MS}"]).exit_code == 0
    first = run([*node, "publish", "cli-dedupe", "once", "--message-id", "event-9"])
    second = run([*node, "publish", "cli-dedupe", "twice", "--message-id", "event-9"])
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert json.loads(first.stdout)["ids"] == json.loads(second.stdout)["ids"]
    taken = run([*node, "get", "cli-dedupe", "--count", "5"])
    assert taken.exit_code == 0, taken.output
    assert [row["body"] for row in json.loads(taken.stdout)] == ["once"]


async def test_rule_a_dead_letter_redriven_into_a_dedupe_queue_is_enqueued_again(
    cluster: ProcessCluster,
) -> None:
    """Review finding: the redrive of a rejected message back into its queue was refused as a duplicate
    of itself (its id still in the window) and confirmed, so it left the dead-letter queue and was in
    neither. A message that carries `x-death` is never taken as a duplicate."""
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("refunds.dlq")
        await client.declare("refunds", {"x-dedupe-window": HOUR_MS, "x-dead-letter-queue": "refunds.dlq"})
        await client.publish("refunds", [Message("refund 9", message_id="refund-9")])
        (taken,) = await client.get("refunds", count=1, ack="manual")
        await client.nack_got("refunds", [taken.id], requeue=False)

        async def dead_lettered() -> bool:
            return (await client.queue("refunds.dlq"))["messages"] == 1

        await eventually(
            dead_lettered, "the rejected refund in the dead-letter queue", timeout=30, interval=0.1
        )
        task = await client.start_redrive("refunds.dlq")

        async def redriven() -> bool:
            (shown,) = [t for t in await client.redrives("refunds.dlq") if t["task"] == task["task"]]
            return shown["state"] == "completed"

        await eventually(redriven, "the redrive completed", timeout=30, interval=0.1)
        back = await client.get("refunds", count=5, ack="auto")
    assert [m.text for m in back] == ["refund 9"]
