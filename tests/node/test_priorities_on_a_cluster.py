"""Message priorities on a real 3-node cluster (issue 22, feature 1): published through a follower (the
peer transport carries them) by the client, over HTTP and by the CLI, served strictly by level and in
publish order within one, counted per level, and kept by a new leader that was killed and restarted."""

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


def cli(node: str, *args: str) -> tuple[int, str]:
    """`quorumq --node NODE --formatter json ARGS...`: its exit code and output."""
    result = CliRunner().invoke(quorumq, ["--node", node, "--formatter", "json", *args])
    return result.exit_code, result.stdout


async def test_priorities_are_served_by_level_through_a_follower_and_a_new_leader(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare("orders", {"x-max-priority": 5})
        leader = (await client.queue("orders"))["leader"]
        follower = next(node for node in cluster.nodes if node.name != leader)
        async with Client([follower.url], timeout=30.0, stream=False) as through_a_follower:
            await through_a_follower.publish(
                "orders",
                [Message("low-1"), Message("rush-1", priority=5), Message("mid", priority=2), "low-2"],
            )
        async with aiohttp.ClientSession(headers={"Authorization": basic_header("guest", "guest")}) as http:
            body = {"messages": [{"body": "rush-2", "priority": 200}]}  # above the top: taken as 5
            async with http.post(f"{follower.url}/api/queues/orders/messages", json=body) as answer:
                assert answer.status == 201, await answer.text()
        stats = await client.queue("orders")
        assert stats["messages_ready_by_priority"] == {"5": 2, "2": 1, "0": 2}
        cluster.node(leader).kill()  # the new leader rebuilds the levels from its log

        async def new_leader() -> bool:  # a failed read: no leader known yet, or the killed node was asked
            return (await client.queue("orders"))["leader"] not in (None, leader)

        await eventually(new_leader, "a new leader", timeout=30, interval=0.2)
        cluster.node(leader).start()
        taken = await client.get("orders", count=5, ack="auto")
    assert [(m.text, m.priority) for m in taken] == [
        ("rush-1", 5),
        ("rush-2", 5),
        ("mid", 2),
        ("low-1", 0),
        ("low-2", 0),
    ]


def test_the_cli_publishes_with_a_priority_and_shows_it(cluster: ProcessCluster) -> None:
    run = functools.partial(cli, cluster.urls[0])
    assert run("declare", "cli-prio")[0] == 0
    assert run("publish", "cli-prio", "later")[0] == 0
    assert run("publish", "cli-prio", "first", "--priority", "9")[0] == 0
    refused = CliRunner().invoke(
        quorumq, ["--node", cluster.urls[0], "publish", "cli-prio", "x", "--priority", "256"]
    )
    assert refused.exit_code == 64 and "256" in refused.output  # a usage error: nothing sent
    code, out = run("get", "cli-prio", "--count", "2")
    assert code == 0, out
    rows = json.loads(out)
    assert [(row["body"], row.get("priority", 0)) for row in rows] == [("first", 9), ("later", 0)]
