"""Authentication: every endpoint but /api/health needs credentials; wrong ones are 401 with JSON, and
their bodies are never read. Tokens end at a password change, the user's deletion or their revocation;
the bootstrap administrator may come from files."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from security_helpers import (
    ADMIN,
    NO_GUEST,
    call,
    concrete,
    eventually_status,
    harness_assertion,
    protected_routes,
)

from cli.node_processes import READY_TIMEOUT_S, ProcessCluster, plan_cluster, wait_healthy
from cluster.security.peer_auth import NODE_AUTH_HEADER, body_digest
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


async def test_health_tells_a_caller_without_credentials_only_what_the_threat_model_lists(
    secured: ProcessCluster,
) -> None:
    """Its readiness and name, the metadata leader's name, counts, the ids of groups in trouble, damage
    found in its database, the progress of its store check and the format versions: nothing more."""
    answer = await call("GET", secured.urls[0] + "/api/health")
    body = answer.body
    assert set(body) == {
        "status", "node", "metadata_leader", "groups_hosted", "groups_led", "groups_quiet", "queues",
        "groups_without_leader", "groups_repairing", "groups_halted", "damage", "store_check", "formats",
    }, body  # fmt: skip
    counts = (body["groups_hosted"], body["groups_led"], body["groups_quiet"], body["queues"])
    assert all(type(count) is int for count in counts), body
    assert (body["status"], body["node"], body["damage"]) == ("ok", "node1", None), body
    assert set(body["store_check"]) == {"done", "checked_bytes"}, body


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
    forged = harness_assertion(
        "@node", "GET", "/api/queues", empty, to="node1", secret="not-the-cluster-secret"
    )
    answer = await _with_header(secured.urls[0] + "/api/queues", forged)
    assert answer == 401
    other_path = harness_assertion("@node", "GET", "/api/users", empty, to="node1")
    assert await _with_header(secured.urls[0] + "/api/queues", other_path) == 401
    genuine = harness_assertion("@node", "GET", "/api/queues", empty, to="node1")
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


async def _whoami_statuses(cluster: ProcessCluster, authorization: str) -> dict[str, int]:
    return {
        node.name: (await call("GET", node.url + "/api/whoami", authorization=authorization)).status
        for node in cluster.nodes
    }


async def test_a_revoked_token_is_refused_by_every_node_that_was_up_until_it_restarts(tmp_path: Path) -> None:
    """`DELETE /api/tokens` (the UI's log-out) revokes the token it carries on the node asked and every
    member it reaches, in memory: a member down then, or restarted since, accepts it until it expires."""
    cluster = ProcessCluster.start(tmp_path, 3, env=NO_GUEST)
    try:
        node1, node2, node3 = cluster.nodes
        minted = await call("POST", node1.url + "/api/tokens", authorization=ADMIN, json={"ttl_s": 600})
        assert minted.status == 201, minted.body
        bearer = f"Bearer {minted.body['token']}"
        everywhere = {"node1": 200, "node2": 200, "node3": 200}
        assert await _whoami_statuses(cluster, bearer) == everywhere
        await asyncio.to_thread(node3.stop)
        revoked = await call("DELETE", node2.url + "/api/tokens", authorization=bearer)
        assert revoked.status == 200, revoked.body
        assert sorted(revoked.body["revoked_on"]) == ["node1", "node2"], revoked.body
        node3.start()
        await asyncio.to_thread(wait_healthy, [node3])
        assert await _whoami_statuses(cluster, bearer) == {"node1": 401, "node2": 401, "node3": 200}
        await asyncio.to_thread(node2.stop)
        node2.start()
        await asyncio.to_thread(wait_healthy, [node2])
        assert await _whoami_statuses(cluster, bearer) == {"node1": 401, "node2": 200, "node3": 200}
        other = await call("POST", node1.url + "/api/tokens", authorization=ADMIN, json={"ttl_s": 600})
        assert (
            await _whoami_statuses(cluster, f"Bearer {other.body['token']}") == everywhere
        )  # others still work
    finally:
        cluster.stop()


async def test_the_bootstrap_administrator_can_come_from_files(tmp_path: Path) -> None:
    """`QUORUMQ_BOOTSTRAP_USER_FILE` / `QUORUMQ_BOOTSTRAP_PASSWORD_FILE` name files holding the bootstrap
    administrator's name and password (a Docker or Kubernetes secret), read at the start."""
    (tmp_path / "user").write_text("filed-admin\n")
    (tmp_path / "password").write_text("filed-password\n")
    env = {
        **NO_GUEST,
        "QUORUMQ_BOOTSTRAP_USER_FILE": str(tmp_path / "user"),
        "QUORUMQ_BOOTSTRAP_PASSWORD_FILE": str(tmp_path / "password"),
    }
    cluster = ProcessCluster.start(tmp_path / "data", 1, env=env)
    try:
        url = cluster.urls[0] + "/api/whoami"
        await eventually_status(url, basic_header("filed-admin", "filed-password"), 200)
        me = await call("GET", url, authorization=basic_header("filed-admin", "filed-password"))
        assert me.body["tags"] == ["administrator"] and me.body["permissions"]["configure"] == ".*", me.body
        assert (await call("GET", url, authorization=ADMIN)).status == 401  # the harness's own was not made
    finally:
        cluster.stop()


@pytest.mark.parametrize("credentials", ["", "Authorization: Bearer qq1.forged.token\r\n"])
async def test_a_body_without_valid_credentials_is_never_read(
    secured: ProcessCluster, credentials: str
) -> None:
    """A publish announcing 50 MB, none of it sent: 401 at once, not after the body's read timeout (30 s),
    so a caller without credentials costs a node no body."""
    node = urlsplit(secured.urls[0])
    reader, writer = await asyncio.open_connection(node.hostname, node.port)
    try:
        writer.write(
            b"POST /api/queues/unread/messages HTTP/1.1\r\nHost: localhost\r\n"
            + f"Content-Type: application/json\r\n{credentials}Content-Length: 50000000\r\n\r\n".encode()
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 15)
        assert status.split()[1] == b"401", status
    finally:
        writer.close()
