"""What stays inside a vhost, on a real in-process node (review findings on virtual hosts, issue 41): a
dead letter names its queue as the queue's vhost does, a policy's dead-letter target naming its own
queue is left out in every vhost, a redrive targets a queue of the source's vhost (and a forged x-death
naming another vhost's queue reaches nothing), and taking a user's read permission in a vhost ends its
consumers there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from in_process_node import InProcessNode, in_process_node
from support.eventually import eventually

from quorumq.auth import basic_header

MALLORY = {"Authorization": basic_header("mallory", "mallory-password-1")}


async def vhosts(node: InProcessNode, *names: str) -> None:
    for name in names:
        status, body = await node.call("PUT", f"/api/vhosts/{name}", json={})
        assert status == 201, body


async def stats(node: InProcessNode, path: str) -> dict[str, Any]:
    status, body = await node.call("GET", path)
    assert status == 200, body
    return dict(body)


async def dead_letter_one(node: InProcessNode, queue_path: str) -> None:
    """Publish one message to the queue at `queue_path`, get it and reject it (requeue false)."""
    status, body = await node.call("POST", f"{queue_path}/messages", json={"messages": [{"body": "m"}]})
    assert status == 201, body
    status, got = await node.call("POST", f"{queue_path}/get", json={"count": 1})
    assert status == 200 and len(got) == 1, got
    status, body = await node.call(
        "POST", f"{queue_path}/nack", json={"ids": [got[0]["id"]], "requeue": False}
    )
    assert status == 200, body


async def test_rule_a_dead_letter_names_its_queue_as_its_vhost_does(tmp_path: Path) -> None:
    """x-death, x-first-death-queue and the routing key a dead letter falls back on name the queue
    within its vhost (`work`, as RabbitMQ), not the cluster's `acme/work`: a dead-letter exchange's
    binding by the queue's name routes it."""
    async with in_process_node(tmp_path) as node:
        await vhosts(node, "acme")
        assert (await node.call("PUT", "/api/exchanges/acme/dlx", json={"type": "direct"}))[0] == 201
        await node.declare("acme/dead")
        await node.declare("acme/work", {"x-dead-letter-exchange": "dlx"})
        assert (await node.call("POST", "/api/bindings/acme/e/dlx/q/dead", json={"routing_key": "work"}))[
            0
        ] == 201
        await dead_letter_one(node, "/api/queues/acme/work")
        await eventually(
            lambda: node.node.directory.leading_door("acme/dead").stats().messages == 1,
            "the dead letter routed by its queue's name",
        )
        status, rows = await node.call("GET", "/api/queues/acme/dead/messages")
        assert status == 200, rows
        headers = rows[0]["headers"]
        assert [death["queue"] for death in headers["x-death"]] == ["work"], headers
        assert headers["x-first-death-queue"] == "work", headers


async def test_rule_a_policy_dead_lettering_a_queue_into_itself_is_left_out_in_every_vhost(
    tmp_path: Path,
) -> None:
    """A policy whose dead-letter target matches the queue it applies to would loop its dead letters for
    ever: its target is left out, in a vhost as in `/`."""
    async with in_process_node(tmp_path) as node:
        await vhosts(node, "acme")
        policy = {"pattern": "^dlq$", "definition": {"dead-letter-queue": "dlq", "message-ttl": 60000}}
        for path in ("/api/policies/%2F/self", "/api/policies/acme/self"):
            assert (await node.call("PUT", path, json=policy))[0] == 201
        for queue in ("dlq", "acme/dlq"):
            await node.declare(queue)

        async def applied(path: str) -> dict[str, Any]:
            shown = await stats(node, path)
            return shown if shown["policy"] == "self" else {}

        for path in ("/api/queues/dlq", "/api/queues/acme/dlq"):
            shown = await eventually(lambda path=path: applied(path), f"the policy applied to {path}")
            assert shown["effective_arguments"]["x-message-ttl"] == 60000, shown
            assert "x-dead-letter-queue" not in shown["effective_arguments"], shown


async def test_rule_a_redrive_target_is_a_queue_of_the_source_vhost(tmp_path: Path) -> None:
    async with in_process_node(tmp_path) as node:
        await vhosts(node, "acme")
        for queue in ("secret", "acme/dlq", "acme/secret"):
            await node.declare(queue)
        status, body = await node.call(
            "POST", "/api/queues/acme/dlq/messages", json={"messages": [{"body": "m"}]}
        )
        assert status == 201, body
        status, task = await node.call(
            "POST", "/api/queues/acme/dlq/redrive", json={"to": "secret", "task": "t1"}
        )
        assert status == 201 and task["to"] == "secret", task
        await eventually(
            lambda: node.node.directory.leading_door("acme/secret").stats().messages == 1,
            "the message moved to acme's queue secret",
        )
        assert node.node.directory.leading_door("secret").stats().messages == 0
        status, refused = await node.call("POST", "/api/queues/acme/dlq/redrive", json={"to": "dlq"})
        assert status == 400, refused  # itself, by its name within its vhost


async def test_rule_a_forged_x_death_naming_another_vhosts_queue_is_redriven_nowhere(tmp_path: Path) -> None:
    """A publisher may set x-death: a redrive by it must not publish into another vhost's queue (the
    node publishes a redriven message as itself)."""
    async with in_process_node(tmp_path) as node:
        await vhosts(node, "acme", "other")
        await node.declare("acme/dlq")
        await node.declare("other/payments")
        forged = {"x-death": [{"queue": "other/payments", "reason": "rejected", "count": 1}]}
        message = {"messages": [{"body": "injected", "headers": forged}]}
        assert (await node.call("POST", "/api/queues/acme/dlq/messages", json=message))[0] == 201
        status, task = await node.call("POST", "/api/queues/acme/dlq/redrive", json={"task": "t1"})
        assert status == 201, task

        async def ended() -> dict[str, Any]:
            status, tasks = await node.call("GET", "/api/queues/acme/dlq/redrive")
            assert status == 200, tasks
            return next((t for t in tasks if t["task"] == "t1" and t["state"] != "running"), {})

        assert (await eventually(ended, "the redrive ended"))["state"] == "failed"
        assert node.node.directory.leading_door("other/payments").stats().messages == 0
        assert node.node.directory.leading_door("acme/dlq").stats().messages == 1


async def test_rule_taking_read_away_in_a_vhost_ends_the_users_consumers_there(tmp_path: Path) -> None:
    async with in_process_node(tmp_path) as node:
        await vhosts(node, "acme")
        assert (await node.call("PUT", "/api/users/mallory", json={"password": "mallory-password-1"}))[
            0
        ] == 201
        grant = {"configure": "", "write": "", "read": "^q$"}
        assert (await node.call("PUT", "/api/permissions/acme/mallory", json=grant))[0] == 204
        door = await node.declare("acme/q")
        status, body = await node.call("POST", "/api/queues/acme/q/consumers", json={}, headers=MALLORY)
        assert status == 201, body
        assert door.stats().consumers == 1
        assert (await node.call("PUT", "/api/permissions/acme/mallory", json={"read": ""}))[0] == 204
        await eventually(lambda: door.stats().consumers == 0, "the consumer ended with its right")
