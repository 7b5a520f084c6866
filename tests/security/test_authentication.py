"""Authentication: every endpoint but /api/health needs credentials; wrong ones are 401 with JSON."""

from __future__ import annotations

import base64
import os
import time

import pytest
from security_helpers import ADMIN, NO_GUEST, call, concrete, eventually_status, protected_routes

from cli.node_processes import HARNESS_SECRET, READY_TIMEOUT_S, ProcessCluster, plan_cluster
from cluster.security.peer_auth import NODE_AUTH_HEADER, body_digest, sign_assertion
from quorumq.auth import basic_header


async def test_every_protected_route_answers_401_without_credentials(secured: ProcessCluster) -> None:
    base = secured.urls[0]
    for method, path, _ in protected_routes():
        answer = await call(method, base + concrete(path))
        assert answer.status == 401, (method, path, answer.body)
        assert answer.body["error"] == "unauthorized", (method, path)
        assert "WWW-Authenticate" not in answer.headers, (method, path)  # decision 0020


async def test_health_is_public(secured: ProcessCluster) -> None:
    answer = await call("GET", secured.urls[0] + "/api/health")
    assert answer.status == 200 and answer.body["status"] == "ok"


async def test_a_node_is_healthy_only_once_it_can_check_passwords(tmp_path) -> None:  # type: ignore[no-untyped-def]
    nodes = plan_cluster(3, tmp_path)
    for node in nodes:
        node.env = {**os.environ, **NO_GUEST}
        node.start()
    try:
        waiting, deadline = list(nodes), time.monotonic() + READY_TIMEOUT_S
        while waiting:  # the first moment each node says healthy, a login must already work there
            assert time.monotonic() < deadline, f"never healthy: {[n.name for n in waiting]}"
            for node in list(waiting):
                if node.healthy():
                    answer = await call("GET", node.url + "/api/whoami", authorization=ADMIN)
                    assert answer.status == 200, (node.name, answer.body)
                    waiting.remove(node)
    finally:
        for node in nodes:
            node.stop()


async def test_unknown_routes_need_credentials_before_they_are_404(secured: ProcessCluster) -> None:
    assert (await call("GET", secured.urls[0] + "/api/nothing-here")).status == 401
    assert (await call("GET", secured.urls[0] + "/api/nothing-here", authorization=ADMIN)).status == 404


@pytest.mark.parametrize(
    "authorization",
    [
        basic_header("quorumq-harness", "not-the-password"),
        basic_header("nobody", "whatever"),
        basic_header("guest", "guest"),  # the guest is disabled on this cluster
        "Basic " + base64.b64encode(b"no-colon").decode(),
        "Basic %%%not-base64",
        "Bearer qq1.forged.token",
        "Bearer ",
        "Digest username=admin",
    ],
)
async def test_wrong_credentials_are_401(secured: ProcessCluster, authorization: str) -> None:
    answer = await call("GET", secured.urls[1] + "/api/queues", authorization=authorization)
    assert answer.status == 401, answer.body
    assert answer.body["error"] == "unauthorized"


async def test_a_forged_node_assertion_is_401(secured: ProcessCluster) -> None:
    empty = body_digest(b"")
    forged = sign_assertion("not-the-cluster-secret", "@node", "GET", "/api/queues", empty, to="node1")
    answer = await _with_header(secured.urls[0] + "/api/queues", forged)
    assert answer == 401
    other_path = sign_assertion(HARNESS_SECRET, "@node", "GET", "/api/users", empty, to="node1")
    assert await _with_header(secured.urls[0] + "/api/queues", other_path) == 401
    genuine = sign_assertion(HARNESS_SECRET, "@node", "GET", "/api/queues", empty, to="node1")
    assert await _with_header(secured.urls[0] + "/api/queues", genuine) == 200


async def _with_header(url: str, assertion: str) -> int:
    return (await call("GET", url, headers={NODE_AUTH_HEADER: assertion})).status


async def test_bearer_tokens_authenticate_on_every_node_until_the_password_changes(
    secured: ProcessCluster,
) -> None:
    base = secured.urls[0]
    assert (
        await call("PUT", base + "/api/users/tok-user", authorization=ADMIN, json={"password": "p1"})
    ).status == 201
    issued = await call(
        "POST", base + "/api/tokens", authorization=basic_header("tok-user", "p1"), json={"ttl_s": 60}
    )
    assert issued.status == 201
    bearer = "Bearer " + issued.body["token"]
    for url in secured.urls:
        answer = await call("GET", url + "/api/whoami", authorization=bearer)
        assert answer.status == 200 and answer.body["name"] == "tok-user"
    tampered = bearer[:-2] + ("AA" if not bearer.endswith("AA") else "BB")
    assert (await call("GET", base + "/api/whoami", authorization=tampered)).status == 401
    changed = await call("PUT", base + "/api/users/tok-user", authorization=ADMIN, json={"password": "p2"})
    assert changed.status == 204
    for url in secured.urls:
        await eventually_status(url + "/api/whoami", bearer, 401)


async def test_deleting_the_user_revokes_its_tokens_on_every_node(secured: ProcessCluster) -> None:
    base = secured.urls[0]
    created = await call("PUT", base + "/api/users/gone-user", authorization=ADMIN, json={"password": "g1"})
    assert created.status == 201
    issued = await call(
        "POST", base + "/api/tokens", authorization=basic_header("gone-user", "g1"), json={"ttl_s": 600}
    )
    assert issued.status == 201
    bearer = "Bearer " + issued.body["token"]
    for url in secured.urls:
        await eventually_status(url + "/api/whoami", bearer, 200)
    assert (await call("DELETE", base + "/api/users/gone-user", authorization=ADMIN)).status == 204
    for url in secured.urls:
        await eventually_status(url + "/api/whoami", bearer, 401)
