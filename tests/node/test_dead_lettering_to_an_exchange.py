"""Dead-lettering through an exchange on a real 3-node cluster (issue 41, slice 3), RabbitMQ's DLX: a topic
dead-letter exchange routes rejected and expired messages to every queue bound for them, at most and at
least once, by each letter's own routing key (the one it was published with through an exchange) or
the queue's `x-dead-letter-routing-key`; at least once, letters that reach no queue wait in their source
until a binding appears, at most once they are dropped; one way of dead-lettering per queue, at runtime
and from policies."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from node_helpers import every_node_writes_the_newest_queue_ops
from support.eventually import eventually

from cli.node_processes import HARNESS_HEADERS
from cli.node_processes import ProcessCluster as Cluster
from quorumq import Client, Delivery, Message

AT_LEAST_ONCE = {"x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"}


async def taken(client: Client, queue: str, count: int) -> dict[str, Delivery]:
    """The first `count` messages to reach `queue`, taken (acknowledged), by body."""
    got: list[Delivery] = []

    async def arrived() -> bool:
        got.extend(await client.get(queue, count=count - len(got), ack="auto"))
        return len(got) >= count

    await eventually(arrived, f"{count} messages in {queue}", timeout=30, interval=0.1)
    return {delivery.body.decode(): delivery for delivery in got}


async def reject(client: Client, queue: str, count: int) -> None:
    """Take `count` messages of `queue` and reject them: they are dead-lettered."""
    got = await client.get(queue, count=count, ack="manual")
    assert len(got) == count
    await client.nack_got(queue, [d.id for d in got], requeue=False)


async def dead_letter_topology(client: Client) -> None:
    """Exchange `events` (topic) routes `order.#` to queue `orders`; dead-letter exchange `dead` (topic)
    routes `order.*.eu` to `dead-eu` and everything to `dead-all`."""
    await client.declare_exchange("events", "topic")
    await client.declare_exchange("dead", "topic")
    for queue in ("dead-eu", "dead-all"):
        await client.declare(queue)
    await client.bind("dead", "dead-eu", "order.*.eu")
    await client.bind("dead", "dead-all", "#")


@pytest.mark.parametrize("strategy", [{}, AT_LEAST_ONCE], ids=["at-most-once", "at-least-once"])
async def test_a_topic_dead_letter_exchange_routes_rejected_and_expired_messages_by_their_own_keys(
    cluster: Cluster, strategy: dict[str, str]
) -> None:
    every_node_writes_the_newest_queue_ops(cluster)
    async with Client(cluster.urls, timeout=30) as client:
        await dead_letter_topology(client)
        await client.declare("orders", {"x-dead-letter-exchange": "dead", **strategy})
        await client.bind("events", "orders", "order.#")
        await client.publish_to_exchange("events", [Message("eu", {"n": 1})], "order.1.eu")
        await client.publish_to_exchange("events", [Message("us", expiration=100)], "order.2.us")
        await reject(client, "orders", 1)  # "eu": "us" expires meanwhile, unread

        everything = await taken(client, "dead-all", 2)
        (eu,) = (await taken(client, "dead-eu", 1)).values()
        assert (eu.body, eu.headers["n"]) == (b"eu", 1)
        for body, reason, key in [("eu", "rejected", "order.1.eu"), ("us", "expired", "order.2.us")]:
            headers = everything[body].headers
            assert (headers["x-amqp-exchange"], headers["x-amqp-routing-key"]) == ("dead", key)
            (death,) = headers["x-death"]
            assert (death["queue"], death["reason"], death["count"]) == ("orders", reason, 1)
            assert (death["exchange"], death["routing-keys"]) == ("events", [key])  # how it had come
        assert eu.headers["x-death"] == everything["eu"].headers["x-death"]
        stats = await client.queue("orders")
        assert stats["messages"] == 0 and stats["dead_lettered"] == {"rejected": 1, "expired": 1}
        assert await client.get("dead-eu", count=10, ack="auto") == []  # each copy once


async def test_a_dead_letter_routing_key_overrides_the_letters_own_and_the_default_exchange_names_a_queue(
    cluster: Cluster,
) -> None:
    every_node_writes_the_newest_queue_ops(cluster)
    async with Client(cluster.urls, timeout=30) as client:
        await dead_letter_topology(client)
        await client.declare(
            "keyed", {"x-dead-letter-exchange": "dead", "x-dead-letter-routing-key": "order.9.eu"}
        )
        await client.declare(
            "by-name", {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dead-eu"}
        )
        await client.declare("own-name", {"x-dead-letter-exchange": "dead", **AT_LEAST_ONCE})
        for queue in ("keyed", "by-name", "own-name"):
            await client.publish(queue, [queue])  # to the queue: its routing key is the queue's name
            await reject(client, queue, 1)

        in_eu = await taken(client, "dead-eu", 2)
        in_all = await taken(client, "dead-all", 2)
        assert sorted(in_eu) == ["by-name", "keyed"] and sorted(in_all) == ["keyed", "own-name"]
        assert in_eu["keyed"].headers["x-amqp-routing-key"] == "order.9.eu"
        assert in_all["own-name"].headers["x-amqp-routing-key"] == "own-name"  # its own: the queue's name
        assert "x-amqp-exchange" not in in_eu["by-name"].headers  # the default exchange routes by name
        (death,) = in_eu["keyed"].headers["x-death"]
        assert (death["exchange"], death["routing-keys"]) == ("", ["keyed"])


async def test_rule_at_least_once_dead_letters_that_reach_no_queue_wait_until_a_binding_appears(
    cluster: Cluster,
) -> None:
    """RabbitMQ's at-least-once dead-lettering retries what its exchange cannot route: nothing is lost
    for want of a binding. At most once, such a letter is dropped, as RabbitMQ drops it."""
    every_node_writes_the_newest_queue_ops(cluster)
    async with Client(cluster.urls, timeout=30) as client:
        await client.declare_exchange("late", "direct")
        await client.declare("late-dead")
        route = {"x-dead-letter-exchange": "late", "x-dead-letter-routing-key": "dead"}
        await client.declare("waiting", {**route, **AT_LEAST_ONCE})
        await client.declare("lossy", route)
        await client.publish("waiting", ["a", "b", "c"])
        await client.publish("lossy", ["gone"])
        await reject(client, "waiting", 3)
        await reject(client, "lossy", 1)

        waiting = await client.queue("waiting")
        assert waiting["messages_dlx"] == 3 and waiting["dead_lettered"] == {"rejected": 3}
        lossy = await client.queue("lossy")
        assert lossy["messages"] == 0 and lossy["dead_lettered"] == {"rejected": 1}
        await client.bind("late", "late-dead", "dead")
        assert sorted(await taken(client, "late-dead", 3)) == ["a", "b", "c"]

        async def settled() -> bool:
            return (await client.queue("waiting"))["messages"] == 0

        await eventually(settled, "the source settled", interval=0.1)
        assert await client.get("late-dead", count=10, ack="auto") == []  # "gone" is gone


async def test_one_way_of_dead_lettering_at_runtime_and_from_a_policy(cluster: Cluster) -> None:
    every_node_writes_the_newest_queue_ops(cluster)
    async with Client(cluster.urls, timeout=30) as client:
        await dead_letter_topology(client)
        await client.declare("dlq")
        await client.declare("switching", {"x-dead-letter-queue": "dlq"})
        await client.declare("policed")
        async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as http:

            async def patch(arguments: dict[str, Any]) -> tuple[int, Any]:
                url = f"{cluster.urls[1]}/api/queues/switching"
                async with http.patch(url, json={"arguments": arguments}) as answer:
                    return answer.status, await answer.json()

            status, refused = await patch({"x-dead-letter-exchange": "dead"})
            assert status == 400 and "x-dead-letter-queue" in refused["reason"], refused
            status, changed = await patch({"x-dead-letter-queue": None, "x-dead-letter-exchange": "dead"})
            assert status == 200 and changed["arguments"]["x-dead-letter-exchange"] == "dead", changed
            status, refused = await patch({"x-dead-letter-exchange": None, "x-dead-letter-routing-key": "k"})
            assert status == 400 and "x-dead-letter-exchange" in refused["reason"], refused
        await client.publish("switching", ["switched"])
        await reject(client, "switching", 1)
        assert list(await taken(client, "dead-all", 1)) == ["switched"]

        await client.declare("own-way", {"x-dead-letter-queue": "dlq"})
        await client.set_policy("dead-letters", "^(policed|own-way)$", {"dead-letter-exchange": "dead"})

        async def in_force() -> bool:
            policed, own_way = await client.queue("policed"), await client.queue("own-way")
            return (policed["policy"], own_way["policy"]) == ("dead-letters", "dead-letters")

        await eventually(in_force, "the policy applied", interval=0.1)
        assert (await client.queue("policed"))["effective_arguments"]["x-dead-letter-exchange"] == "dead"
        assert "x-dead-letter-exchange" not in (await client.queue("own-way"))["effective_arguments"]
        await client.publish("policed", ["by policy"])
        await reject(client, "policed", 1)
        assert list(await taken(client, "dead-all", 1)) == ["by policy"]
        await client.publish("own-way", ["its own"])
        await reject(client, "own-way", 1)
        assert list(await taken(client, "dlq", 1)) == ["its own"]  # its own way wins whole
