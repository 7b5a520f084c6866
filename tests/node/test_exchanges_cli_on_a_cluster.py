"""Exchanges and bindings through the client and the `quorumq` CLI on a real 3-node cluster (issue 41):
a client's publish right after its own bind is routed by it on whichever node takes it, over HTTP and
over the stream; the CLI declares, binds, publishes through an exchange, lists, unbinds and deletes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from support.eventually import eventually

from cli.app import cli as quorumq
from cli.node_processes import ProcessCluster
from quorumq import Client


def cli(node: str, *args: str) -> tuple[int, Any]:
    """`quorumq --node NODE --formatter json ARGS...`: its exit code and its JSON output (else its text)."""
    result = CliRunner().invoke(quorumq, ["--node", node, "--formatter", "json", *args])
    try:
        return result.exit_code, json.loads(result.stdout)
    except ValueError:
        return result.exit_code, result.output


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "http"])
async def test_rule_a_publish_right_after_a_bind_is_routed_by_it_on_every_node(
    cluster: ProcessCluster, stream: bool
) -> None:
    async with Client(cluster.urls, timeout=30.0) as admin:
        await admin.declare("eu")
    for index, url in enumerate(cluster.urls):  # the metadata's followers among them
        async with Client([url], timeout=30.0, stream=stream) as client:
            exchange = f"regions-{index}"
            assert await client.declare_exchange(exchange, "direct")
            await client.bind(exchange, "eu", "eu")
            routed = await client.publish_to_exchange(exchange, ["a", "b"], "eu", mandatory=True)
            assert routed.unroutable == [] and list(routed.routed) == ["eu"], routed
            again = await client.publish_to_exchange(exchange, ["a", "b"], "eu", seq=1)  # the same seq
            assert again.routed == routed.routed
            await client.unbind(exchange, "eu", "eu")
            gone = await client.publish_to_exchange(exchange, "c", "eu", mandatory=True)
            assert gone.unroutable == [0] and gone.routed == {}, gone
    async with Client(cluster.urls, timeout=30.0) as admin:
        assert (await admin.queue("eu"))["messages"] == 6


async def test_the_cli_declares_binds_publishes_through_lists_unbinds_and_deletes(
    cluster: ProcessCluster,
) -> None:
    first, second, third = cluster.urls
    async with Client(cluster.urls, timeout=30.0) as client:
        for queue in ("eu", "audit"):
            await client.declare(queue)
    assert cli(first, "exchanges", "declare", "events", "--type", "topic")[1]["created"]
    assert cli(second, "exchanges", "declare", "everything", "--type", "fanout")[0] == 0
    code, bound = cli(second, "bindings", "add", "events", "eu", "-k", "order.*.eu")
    assert code == 0 and bound["properties_key"] == "order.*.eu", bound
    assert cli(first, "bindings", "add", "events", "everything", "-k", "#", "--exchange-destination")[0] == 0
    assert cli(first, "bindings", "add", "everything", "audit")[0] == 0  # no routing key: a fanout's

    def applied_on_third() -> bool:  # each command is a client of its own: wait for the node to apply
        return len(cli(third, "bindings", "list")[1]) == 3

    await eventually(applied_on_third, "the third node to apply the bindings")
    code, published = cli(third, "publish", "-e", "events", "-k", "order.17.eu", "o1", "o2")
    assert code == 0, published
    assert published["routed"].keys() == {"eu", "audit"} and published["unroutable"] == []
    code, published = cli(third, "publish", "-e", "events", "-k", "invoice.1", "i1", "--mandatory")
    assert code == 0 and list(published["routed"]) == ["audit"], published
    code, _ = cli(third, "publish", "-e", "", "-k", "eu", "direct to eu")
    assert code == 0

    listed = cli(second, "exchanges", "list")[1]
    assert {"events", "everything", "", "amq.topic"} <= {x["name"] for x in listed}
    code, refused = cli(first, "exchanges", "delete", "events", "--if-unused")
    assert code == 1 and "precondition_failed" in refused, refused
    assert cli(second, "bindings", "remove", "events", "eu", "-k", "order.*.eu")[0] == 0
    assert [b["destination"] for b in cli(second, "bindings", "list", "--source", "events")[1]] == [
        "everything"
    ]
    assert cli(first, "exchanges", "delete", "events")[0] == 0
    assert cli(third, "bindings", "remove", "everything", "audit")[0] == 0
    assert cli(second, "bindings", "list", "--source", "everything")[1] == []
    async with Client(cluster.urls, timeout=30.0) as client:
        assert (await client.queue("eu"))["messages"] == 2 + 1
        assert (await client.queue("audit"))["messages"] == 2 + 1
