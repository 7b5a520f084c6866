"""Policies on a real 3-node cluster (issue 22, feature 8): set through any node by the CLI, the client
and HTTP, applied at once to matching queues and to queues declared later, the highest priority winning,
the queue's own values winning except for stricter limits, shown per queue with the arguments in force;
cleared, the declared arguments return; a target group size grows the group at once; bad input is a 400
and changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner
from support.eventually import eventually

from cli.app import cli as quorumq
from cli.node_processes import ProcessCluster
from quorumq import Client, RejectedPublishError
from quorumq.auth import basic_header

FAST_RECONCILE = {"QUORUMQ_MEMBERSHIP_TRIGGER_DELAY_MS": "300"}


@pytest.fixture
def reconciling(tmp_path: Path) -> Iterator[ProcessCluster]:
    running = ProcessCluster.start(tmp_path, count=3, env=FAST_RECONCILE)
    yield running
    running.stop()


def cli(node: str, *args: str) -> tuple[int, str]:
    """`quorumq --node NODE --formatter json ARGS...`: its exit code and output (stderr included)."""
    result = CliRunner().invoke(quorumq, ["--node", node, "--formatter", "json", *args])
    return result.exit_code, result.output


async def test_a_policy_applies_to_matching_queues_now_and_later_and_clearing_it_restores_them(
    reconciling: ProcessCluster,
) -> None:
    urls = reconciling.urls
    async with Client(urls, timeout=30.0) as client:
        await client.declare("orders.eu", {"x-message-ttl": 60000, "x-delivery-limit": 9})
        await client.declare("audit")
        code, out = cli(
            urls[2], "policies", "set", "limits", r"^orders\.",
            json.dumps({"max-length": 2, "overflow": "reject-publish", "message-ttl": 5000000,
                        "delivery-limit": 3}),
        )  # fmt: skip
        assert code == 0, out

        async def applied(queue: str, policy: str | None) -> dict[str, Any] | None:
            shown = await client.queue(queue)
            return shown if shown["policy"] == policy else None

        eu = await eventually(
            lambda: applied("orders.eu", "limits"),
            "the policy applied to orders.eu",
            timeout=30.0,
            interval=0.1,
        )
        assert eu["arguments"] == {"x-queue-type": "quorum", "x-message-ttl": 60000, "x-delivery-limit": 9}
        assert eu["effective_arguments"] == {
            "x-queue-type": "quorum",
            "x-max-length": 2,
            "x-overflow": "reject-publish",
            "x-delivery-limit": 3,  # the stricter limit
            "x-message-ttl": 60000,  # the stricter too: the queue's own
        }
        assert (await client.queue("audit"))["policy"] is None
        await client.declare("orders.us")  # declared later: its first leader applies the policy
        await eventually(
            lambda: applied("orders.us", "limits"),
            "the policy applied to a later queue",
            timeout=30.0,
            interval=0.1,
        )
        for queue in ("orders.eu", "orders.us"):
            await client.publish(queue, ["a", "b"])
            with pytest.raises(RejectedPublishError):
                await client.publish(queue, ["c"])

        assert await client.set_policy("strict", "^orders.eu$", {"max-length": 1}, priority=5)
        eu = await eventually(
            lambda: applied("orders.eu", "strict"), "the higher priority applied", timeout=30.0, interval=0.1
        )
        assert "x-overflow" not in eu["effective_arguments"]  # one policy applies, not a merge

        await client.clear_policy("strict")
        await eventually(
            lambda: applied("orders.eu", "limits"),
            "the other matching policy back",
            timeout=30.0,
            interval=0.1,
        )
        code, out = cli(urls[1], "policies", "clear", "limits")
        assert code == 0, out
        for queue in ("orders.eu", "orders.us"):
            shown = await eventually(
                lambda queue=queue: applied(queue, None),
                "the declared arguments back",
                timeout=30.0,
                interval=0.1,
            )
            assert shown["effective_arguments"] == shown["arguments"]
            await client.publish(queue, ["c"])
        assert await client.policies() == []


async def test_a_target_group_size_in_a_policy_grows_matching_groups_at_once(
    reconciling: ProcessCluster,
) -> None:
    async with Client(reconciling.urls, timeout=30.0) as client:
        await client.declare("payments", {"x-quorum-initial-group-size": 1})
        await client.publish("payments", ["kept"])
        assert len((await client.queue("payments"))["members"]) == 1
        await client.set_policy("replicated", "^payments$", {"target-group-size": 3})

        async def grown() -> bool:
            return len((await client.queue("payments"))["members"]) == 3

        await eventually(grown, "the group grown to the policy's target size", timeout=60.0, interval=0.1)
        (message,) = await client.get("payments", count=1, ack="auto")
        assert message.text == "kept"


async def test_bad_policies_are_refused_and_change_nothing(cluster: ProcessCluster) -> None:
    url = cluster.urls[0]
    async with aiohttp.ClientSession(headers={"Authorization": basic_header("guest", "guest")}) as http:
        for body in [
            {"pattern": ".*", "definition": {"max-priority": 3}},  # fixed at declaration
            {"pattern": ".*", "definition": {"max-length": -5}},
            {"pattern": ".*", "definition": {}},
            {"pattern": "(a", "definition": {"max-length": 5}},
            {"pattern": "(?=a)", "definition": {"max-length": 5}},  # lookaround: RE2 has none
            {"pattern": ".*", "definition": {"max-length": 5}, "priority": "high"},
            {"pattern": ".*", "definition": {"max-length": 5}, "apply-to": "exchanges"},
        ]:
            async with http.put(f"{url}/api/policies/p", json=body) as answer:
                assert answer.status == 400, body
                assert (await answer.json())["error"] == "bad_request"
        async with http.delete(f"{url}/api/policies/none") as answer:
            assert answer.status == 404
        async with http.get(f"{url}/api/policies") as answer:
            assert await answer.json() == []
    code, out = cli(url, "policies", "set", "p", ".*", "not json")
    assert code == 64 and "not JSON" in out
    code, out = cli(url, "policies", "clear", "none")
    assert code != 0 and "no policy" in out
