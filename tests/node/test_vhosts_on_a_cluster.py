"""Virtual hosts on a real 3-node cluster (issue 41, item 3): each vhost its own namespace of queues,
exchanges, bindings, policies and permissions, over RabbitMQ's management paths (`%2F` for `/`), the
Python client and its stream (`vhost=`), and both CLIs' `-p`/`--vhost-pattern`; a vhost holding queues
is not deleted, and a name a vhost and a queue of `/` would share is refused."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from click.testing import CliRunner
from support.eventually import eventually

from cli.app import cli as quorumq_command
from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from cli.queues import cli as queues_command
from quorumq import Client, ForbiddenError, NotFoundError
from quorumq.auth import basic_header

TENANT = "tenant"
REVISION = "X-Quorumq-Routing-Revision"
BOB = {"Authorization": basic_header("bob", "bob-password-1")}


def run_cli(url: str, *args: str) -> tuple[int, str, str]:
    """`quorumq --node URL ARGS...`: its exit code, stdout and stderr."""
    result = CliRunner().invoke(quorumq_command, ["--node", url, *args])
    return result.exit_code, result.stdout, result.stderr


def run_queues_cli(url: str, *args: str) -> tuple[int, str, str]:
    """`quorumq-queues --node URL ARGS...`: its exit code, stdout and stderr."""
    result = CliRunner().invoke(queues_command, ["--node", url, *args])
    return result.exit_code, result.stdout, result.stderr


class Http:
    """Raw calls to the cluster's nodes as `headers` (the harness administrator by default)."""

    def __init__(self, session: aiohttp.ClientSession, urls: list[str]) -> None:
        self.session = session
        self.urls = urls
        self.revision = "0"  # of the routing, as the last change answered it: read your writes

    async def call(
        self, node: int, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        sent = {**(headers or HARNESS_HEADERS), REVISION: self.revision}
        async with self.session.request(method, self.urls[node] + path, json=body, headers=sent) as answer:
            self.revision = answer.headers.get(REVISION, self.revision)
            text = await answer.text()
            return answer.status, json.loads(text) if text else None


@pytest.fixture
async def http(cluster: ProcessCluster) -> Any:
    async with aiohttp.ClientSession() as session:
        yield Http(session, cluster.urls)


async def test_a_vhost_is_its_own_namespace_of_queues_exchanges_and_policies(
    cluster: ProcessCluster, http: Http
) -> None:
    assert (await http.call(0, "PUT", f"/api/vhosts/{TENANT}", {"description": "acme"}))[0] == 201
    assert (await http.call(1, "PUT", f"/api/vhosts/{TENANT}", {"tags": "prod,eu"}))[0] == 204
    status, vhosts = await http.call(2, "GET", "/api/vhosts")
    assert status == 200 and [v["name"] for v in vhosts] == ["/", TENANT]
    assert vhosts[1]["tags"] == ["prod", "eu"]

    async with (
        Client(cluster.urls, timeout=30.0) as default,
        Client(cluster.urls, timeout=30.0, vhost=TENANT) as tenant,
    ):
        assert await default.declare("orders")
        assert await tenant.declare("orders", {"x-max-length": 5})
        await default.publish("orders", ["to-default"])
        await tenant.publish("orders", ["to-tenant-1", "to-tenant-2"])
        assert [d.body for d in await tenant.get("orders", 10, ack="auto")] == [
            b"to-tenant-1",
            b"to-tenant-2",
        ]
        assert [d.body for d in await default.get("orders", 10, ack="auto")] == [b"to-default"]

        status, one = await http.call(1, "GET", f"/api/queues/{TENANT}/orders")  # RabbitMQ's path
        assert status == 200 and (one["vhost"], one["name"]) == (TENANT, "orders"), one
        assert one["arguments"]["x-max-length"] == 5
        status, listed = await http.call(2, "GET", "/api/queues")
        assert sorted((q["vhost"], q["name"]) for q in listed) == [("/", "orders"), (TENANT, "orders")]
        status, listed = await http.call(0, "GET", f"/api/queues/{TENANT}")  # a vhost's listing
        assert status == 200 and [(q["vhost"], q["name"]) for q in listed] == [(TENANT, "orders")]
        with pytest.raises(NotFoundError):  # `/api/queues/tenant` lists vhost tenant: no queue of `/`
            await default.queue(TENANT)
        status, listed = await http.call(0, "GET", "/api/queues/%2F")
        assert [(q["vhost"], q["name"]) for q in listed] == [("/", "orders")]

        # a policy of the vhost applies to its queues only
        cap = {"pattern": "^orders$", "definition": {"max-length": 2}, "priority": 1}
        assert (await http.call(0, "PUT", f"/api/policies/{TENANT}/cap", cap))[0] == 201

        async def capped() -> Any:
            shown = await tenant.queue("orders")
            return shown if shown["policy"] == "cap" else None

        one = await eventually(capped, "the vhost's policy applied to its queue", timeout=30.0, interval=0.1)
        assert one["effective_arguments"]["x-max-length"] == 2, one
        status, one = await http.call(0, "GET", "/api/queues/orders")
        assert one["policy"] is None, one
        status, policies = await http.call(1, "GET", "/api/policies")
        assert [(p["vhost"], p["name"]) for p in policies] == [(TENANT, "cap")]

        # an exchange of the vhost routes to its queues only, and by name to none of another vhost
        assert (await http.call(0, "PUT", f"/api/exchanges/{TENANT}/fan", {"type": "fanout"}))[0] == 201
        assert (await http.call(1, "POST", f"/api/bindings/{TENANT}/e/fan/q/orders", {}))[0] == 201
        message = {"routing_key": "", "messages": [{"body": "fanned"}]}
        status, answer = await http.call(2, "POST", f"/api/exchanges/{TENANT}/fan/publish", message)
        assert status == 201 and list(answer["routed"]) == ["orders"], answer
        assert (await http.call(0, "GET", "/api/exchanges/%2F/fan"))[0] == 404
        sideways = {"routing_key": f"{TENANT}/orders", "messages": [{"body": "x"}], "mandatory": True}
        status, answer = await http.call(0, "POST", "/api/exchanges/%2F/amq.default/publish", sideways)
        assert status == 200 and answer["unroutable"] == [0], answer
        assert [d.body for d in await tenant.get("orders", 10, ack="auto")] == [b"fanned"]
        assert await default.get("orders", 10, ack="auto") == []

        # a vhost holding a queue stays; without one it goes with its exchanges and policies
        status, refused = await http.call(0, "DELETE", f"/api/vhosts/{TENANT}")
        assert status == 409 and refused["error"] == "in_use", refused
        await tenant.delete_queue("orders")
        assert (await http.call(1, "DELETE", f"/api/vhosts/{TENANT}"))[0] == 204
        status, _ = await http.call(2, "GET", f"/api/exchanges/{TENANT}/fan")
        assert status == 404
        assert (await http.call(0, "GET", "/api/policies"))[1] == []
        assert (await http.call(0, "GET", "/api/queues/orders"))[0] == 200  # `/`'s queue stays


async def test_rule_a_queue_of_the_default_vhost_and_a_vhost_never_share_a_name(
    cluster: ProcessCluster, http: Http
) -> None:
    assert (await http.call(0, "PUT", "/api/queues/orders", {}))[0] == 201
    status, refused = await http.call(1, "PUT", "/api/vhosts/orders", {})
    assert status == 400, refused
    assert (await http.call(0, "PUT", f"/api/vhosts/{TENANT}", {}))[0] == 201
    status, refused = await http.call(2, "PUT", f"/api/queues/{TENANT}", {})
    assert status == 400 and "vhost" in refused["reason"], refused
    status, refused = await http.call(0, "PUT", f"/api/queues/{TENANT}/messages", {})
    assert status == 400 and "word" in refused["reason"], refused  # /api/queues/{q}/messages is taken
    status, refused = await http.call(0, "PUT", "/api/queues/missing/orders", {})
    assert status == 403 and "vhost 'missing'" in refused["reason"], refused  # no rights in none
    status, refused = await http.call(0, "GET", "/api/vhosts/missing")
    assert status == 404, refused


async def test_permissions_are_per_vhost_for_http_the_stream_and_the_cli(
    cluster: ProcessCluster, http: Http
) -> None:
    assert (await http.call(0, "PUT", f"/api/vhosts/{TENANT}", {}))[0] == 201
    assert (await http.call(0, "PUT", "/api/users/bob", {"password": "bob-password-1"}))[0] == 201
    grant = {"configure": "^orders$", "write": "^orders$", "read": "^orders$"}
    assert (await http.call(1, "PUT", f"/api/permissions/{TENANT}/bob", grant))[0] == 204
    assert (await http.call(0, "PUT", "/api/queues/orders", {}))[0] == 201
    status, rows = await http.call(2, "GET", "/api/permissions")
    assert {"user": "bob", "vhost": TENANT, **grant} in rows, rows

    async with Client(cluster.urls, timeout=30.0, auth=("bob", "bob-password-1"), vhost=TENANT) as bob:
        assert await bob.declare("orders")
        assert len(await bob.publish("orders", ["mine"])) == 1  # over the stream, in the vhost it said
        async with bob.subscribe("orders", prefetch=1) as subscription:
            async for message in subscription:
                assert message.body == b"mine"
                await message.ack()
                break
    status, refused = await http.call(
        0, "POST", "/api/queues/orders/messages", {"messages": [{"body": "x"}]}, BOB
    )
    assert status == 403, refused  # no permission in `/`
    async with Client(cluster.urls, timeout=30.0, auth=("bob", "bob-password-1")) as bob_in_default:
        with pytest.raises(ForbiddenError):
            await bob_in_default.publish("orders", ["x"])
    status, visible = await http.call(0, "GET", "/api/vhosts", headers=BOB)
    assert [v["name"] for v in visible] == [TENANT]

    url = cluster.urls[0]
    code, out, err = await asyncio.to_thread(run_cli, url, "-p", TENANT, "publish", "orders", "from-cli")
    assert code == 0, (out, err)
    code, out, err = await asyncio.to_thread(run_cli, url, "--vhost", TENANT, "get", "orders", "-f", "json")
    assert code == 0 and "from-cli" in out, (out, err)
    code, out, err = await asyncio.to_thread(run_cli, url, "-p", "missing", "publish", "orders", "x")
    assert code != 0 and "vhost" in err, (out, err)

    assert (await http.call(1, "DELETE", f"/api/permissions/{TENANT}/bob"))[0] == 204
    status, refused = await http.call(
        2, "POST", f"/api/queues/{TENANT}/orders/messages", {"messages": [{"body": "x"}]}, BOB
    )
    assert status == 403, refused


async def test_quorumq_queues_grow_and_shrink_take_a_vhost_pattern(
    cluster: ProcessCluster, http: Http
) -> None:
    assert (await http.call(0, "PUT", f"/api/vhosts/{TENANT}", {}))[0] == 201
    one = {"arguments": {"x-quorum-initial-group-size": 1}}
    for path in ("/api/queues/a", f"/api/queues/{TENANT}/a", f"/api/queues/{TENANT}/b"):
        assert (await http.call(0, "PUT", path, one))[0] == 201
    _, listed = await http.call(0, "GET", "/api/queues")
    members = {(q["vhost"], q["name"]): q["members"] for q in listed}
    node = next(n for n in ("node1", "node2", "node3") if all(n not in m for m in members.values()))
    url = cluster.urls[0]
    code, out, err = await asyncio.to_thread(
        run_queues_cli, url, "grow", node, "all", "--vhost-pattern", f"^{TENANT}$", "-f", "json"
    )
    assert code == 0, (out, err)
    grown = json.loads(out)
    assert sorted((r["vhost"], r["name"], r["result"]) for r in grown) == [
        (TENANT, "a", "ok"),
        (TENANT, "b", "ok"),
    ]
    _, listed = await http.call(1, "GET", "/api/queues")
    assert {(q["vhost"], q["name"]) for q in listed if node in q["members"]} == {(TENANT, "a"), (TENANT, "b")}
    code, out, err = await asyncio.to_thread(run_queues_cli, url, "shrink", node, "-f", "json")
    assert code == 0 and len(json.loads(out)) == 2, (out, err)
    code, out, err = await asyncio.to_thread(run_queues_cli, url, "-p", TENANT, "quorum_status", "a")
    assert code == 0 and "quorum queue 'a'" in out, (out, err)
