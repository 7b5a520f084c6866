"""Authorisation: RabbitMQ's configure/write/read regexes per queue, administrators for membership and
users, 403 (not 401) for valid credentials without the permission."""

from __future__ import annotations

import asyncio

import pytest
from security_helpers import ADMIN, add_user, call, concrete, eventually_status, protected_routes

from api.access import Access
from cli.node_processes import ProcessCluster
from quorumq.auth import basic_header

ALICE = basic_header("alice", "alice-pw")
WRITER = basic_header("writer", "writer-pw")
PER_QUEUE = {
    Access.CONFIGURE,
    Access.WRITE,
    Access.READ,
    Access.ANY_QUEUE_PERMISSION,
    Access.QUEUE_OR_VHOST,  # "other" names no vhost
    Access.CONFIGURE_ADMIN,
}


@pytest.fixture(scope="module")
def users(secured: ProcessCluster) -> ProcessCluster:
    """alice: everything on `alice-*` queues, no administrator tag; writer: publish to `shared` only."""
    asyncio.run(_create_users(secured))
    return secured


async def _create_users(secured: ProcessCluster) -> None:
    base = secured.urls[0]
    alice = {"configure": "^alice-.*", "write": "^alice-.*", "read": "^alice-.*"}
    await add_user(secured.urls, "alice", "alice-pw", alice)
    await add_user(secured.urls, "writer", "writer-pw", {"write": "^shared$"})
    for queue in ("alice-q", "shared", "other"):
        assert (await call("PUT", f"{base}/api/queues/{queue}", authorization=ADMIN, json={})).status in (
            201,
            204,
        )
    return secured


@pytest.mark.parametrize(("method", "path", "access"), protected_routes())
async def test_a_user_without_the_permission_gets_403_on_every_route_class(
    users: ProcessCluster, method: str, path: str, access: Access
) -> None:
    answer = await call(method, users.urls[1] + concrete(path, q="other"), authorization=ALICE, json={})
    if access in PER_QUEUE or access in (Access.ADMINISTRATOR, Access.NODE):
        assert answer.status == 403, answer.body
        assert answer.body["error"] == "forbidden"
    else:
        assert answer.status not in (401, 403), answer.body


@pytest.mark.parametrize(("method", "path", "access"), protected_routes())
async def test_a_user_with_the_permission_passes_per_queue_checks(
    users: ProcessCluster, method: str, path: str, access: Access
) -> None:
    answer = await call(method, users.urls[2] + concrete(path, q="alice-q"), authorization=ALICE, json={})
    if access in (Access.CONFIGURE_ADMIN, Access.ADMINISTRATOR, Access.NODE):
        assert answer.status == 403, answer.body  # membership, users: administrators; joins: nodes
    else:
        assert answer.status not in (401, 403), (answer.status, answer.body)


async def test_write_permission_allows_publishing_and_nothing_else(users: ProcessCluster) -> None:
    base = users.urls[0] + "/api/queues/shared"
    published = await call(
        "POST", base + "/messages", authorization=WRITER, json={"messages": [{"body": "m"}]}
    )
    assert published.status == 201
    assert (await call("POST", base + "/get", authorization=WRITER, json={})).status == 403
    assert (await call("PUT", base, authorization=WRITER, json={})).status == 403
    assert (await call("DELETE", base + "/contents", authorization=WRITER)).status == 403
    other = await call("POST", users.urls[0] + "/api/queues/other/messages", authorization=WRITER, json={})
    assert other.status == 403


async def test_the_queue_list_shows_each_user_only_the_queues_it_holds_a_permission_on(
    users: ProcessCluster,
) -> None:
    async def listed(authorization: str) -> set[str]:
        answer = await call("GET", users.urls[1] + "/api/queues", authorization=authorization)
        assert answer.status == 200, answer.body
        return {queue["name"] for queue in answer.body}

    assert await listed(ALICE) == {"alice-q"}
    assert await listed(WRITER) == {"shared"}
    assert {"alice-q", "shared", "other"} <= await listed(ADMIN)


async def test_user_management_refuses_removing_yourself_the_last_administrator_and_the_guest(
    users: ProcessCluster,
) -> None:
    base = users.urls[0]
    assert (await call("DELETE", base + "/api/users/quorumq-harness", authorization=ADMIN)).status == 409
    demote = await call("PUT", base + "/api/users/quorumq-harness", authorization=ADMIN, json={"tags": []})
    assert demote.status == 409 and demote.body["error"] == "last_administrator"
    guest = await call("PUT", base + "/api/users/guest", authorization=ADMIN, json={"password": "x"})
    assert guest.status == 409
    bad_pattern = await call(
        "PUT", base + "/api/users/alice/permissions", authorization=ADMIN, json={"read": "("}
    )
    assert bad_pattern.status == 400


async def test_a_deleted_user_is_locked_out_everywhere(users: ProcessCluster) -> None:
    base = users.urls[0]
    assert (
        await call("PUT", base + "/api/users/leaver", authorization=ADMIN, json={"password": "pw"})
    ).status == 201
    leaver = basic_header("leaver", "pw")
    for url in users.urls:
        await eventually_status(url + "/api/whoami", leaver, 200)
    assert (await call("DELETE", base + "/api/users/leaver", authorization=ADMIN)).status == 204
    for url in users.urls:
        await eventually_status(url + "/api/whoami", leaver, 401)
