"""Operator policies on a real 3-node cluster (issue 41, item 4): an administrator's limits apply over a
queue's own arguments and its policy, the smallest winning, to queues now and declared later; the queue
names both; a key that is no limit is refused; cleared, the queue's and its policy's limits return."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner
from support.eventually import eventually

from cli.app import cli as quorumq
from cli.node_processes import ProcessCluster
from quorumq import Client, RejectedPublishError
from quorumq.auth import basic_header


def cli(node: str, *args: str) -> tuple[int, str]:
    """`quorumq --node NODE --formatter json ARGS...`: its exit code and output (stderr included)."""
    result = CliRunner().invoke(quorumq, ["--node", node, "--formatter", "json", *args])
    return result.exit_code, result.output


async def test_an_operator_policy_caps_queues_over_their_own_limits_and_their_policy(
    cluster: ProcessCluster,
) -> None:
    urls = cluster.urls
    async with Client(urls, timeout=30.0) as client:
        await client.declare("orders.eu", {"x-max-length": 100, "x-overflow": "reject-publish"})
        await client.set_policy("limits", r"^orders\.", {"max-length": 50, "delivery-limit": 7})
        code, out = cli(urls[2], "policies", "set", "--operator", "cap", ".", json.dumps({"max-length": 2}))
        assert code == 0, out

        async def applied(queue: str, operator: str | None) -> dict[str, Any] | None:
            shown = await client.queue(queue)
            return shown if shown["operator_policy"] == operator and shown["policy"] == "limits" else None

        eu = await eventually(
            lambda: applied("orders.eu", "cap"), "the operator policy applied", timeout=30.0, interval=0.1
        )
        assert eu["effective_arguments"]["x-max-length"] == 2  # the operator's, below 100 and 50
        assert eu["effective_arguments"]["x-delivery-limit"] == 7  # the policy's: the operator sets none
        await client.publish("orders.eu", ["a", "b"])
        with pytest.raises(RejectedPublishError):
            await client.publish("orders.eu", ["c"])

        await client.declare("orders.us", {"x-overflow": "reject-publish"})  # declared later
        us = await eventually(
            lambda: applied("orders.us", "cap"),
            "the operator policy on a later queue",
            timeout=30.0,
            interval=0.1,
        )
        assert us["effective_arguments"]["x-max-length"] == 2
        code, out = cli(urls[0], "policies", "list", "--operator")
        assert code == 0 and [p["name"] for p in json.loads(out)] == ["cap"], out

        async with aiohttp.ClientSession(headers={"Authorization": basic_header("guest", "guest")}) as http:
            not_a_limit = {"pattern": ".", "definition": {"dead-letter-queue": "dlq"}}
            async with http.put(f"{urls[1]}/api/operator-policies/lift", json=not_a_limit) as answer:
                assert answer.status == 400, await answer.text()
                assert "not an operator policy key" in (await answer.json())["reason"]
        assert [p["name"] for p in await client.policies(operator=True)] == ["cap"]

        await client.clear_policy("cap", operator=True)
        eu = await eventually(
            lambda: applied("orders.eu", None), "the operator policy cleared", timeout=30.0, interval=0.1
        )
        assert eu["effective_arguments"]["x-max-length"] == 50
        await client.publish("orders.eu", ["c"])
