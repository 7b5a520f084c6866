"""Ordered message groups on a real 3-node cluster (issue 41, item 5): two consumers of one grouped queue
get each group's messages in order, one of a group at a time, across a change of leader; a group given
as the header `x-group-id` orders as the field does; the CLI publishes with --group."""

from __future__ import annotations

import functools
import json

from click.testing import CliRunner

from cli.main import cli as quorumq
from cli.node_processes import ProcessCluster
from quorumq import Client, Message

GROUPS = ("order-1", "order-2", "order-3", "order-4")
PER_GROUP = 6


async def test_two_consumers_get_each_group_in_order_one_at_a_time_across_a_new_leader(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0, stream=False) as client:
        await client.declare("orders", {"x-message-groups": True})
        steps = [Message(f"{group}:{step}", group=group) for step in range(PER_GROUP) for group in GROUPS]
        await client.publish("orders", steps[: len(steps) // 2])
        headed = [Message(m.body, headers={"x-group-id": m.group}) for m in steps[len(steps) // 2 :]]
        await client.publish("orders", headed)
        stats = await client.queue("orders")
        assert (stats["messages_ready"], stats["groups"], stats["groups_blocked"]) == (24, 4, 0)
        tags = [await client.consume("orders", prefetch=2) for _ in range(2)]
        done: dict[str, list[int]] = {group: [] for group in GROUPS}
        successor = next(member for member in stats["members"] if member != stats["leader"])
        moved = False
        while sum(map(len, done.values())) < len(steps):
            held = [m for tag in tags for m in await client.deliveries("orders", tag, max=2, wait=1.0)]
            groups = [m.group for m in held]
            assert len(groups) == len(set(groups)), f"two messages of a group out at once: {groups}"
            for message in held:
                group, step = message.text.split(":")
                assert message.group == group
                assert int(step) == len(done[group]), f"{message.text} after {done[group]}"
            if not moved and sum(map(len, done.values())) >= len(steps) // 2:
                await client.transfer_leader("orders", successor)
                moved = True
            for message in held:
                await message.ack()
                group, step = message.text.split(":")
                done[group].append(int(step))
        after = await client.queue("orders")
        for tag in tags:
            await client.cancel("orders", tag)
    assert moved and after["leader"] == successor
    assert (after["messages"], after["groups"], after["groups_blocked"]) == (0, 0, 0)


def test_the_cli_publishes_in_a_group(cluster: ProcessCluster) -> None:
    run = functools.partial(CliRunner().invoke, quorumq)
    node = ["--node", cluster.urls[0], "--formatter", "json"]
    assert run([*node, "declare", "cli-groups", "--arg", "x-message-groups=true"]).exit_code == 0
    for body in ("first", "second"):
        published = run([*node, "publish", "cli-groups", body, "--group", "shipment-7"])
        assert published.exit_code == 0, published.output
    taken = run([*node, "get", "cli-groups", "--count", "5"])
    assert taken.exit_code == 0, taken.output
    rows = json.loads(taken.stdout)
    assert [(row["body"], row["headers"]["x-group-id"]) for row in rows] == [("first", "shipment-7")]
