"""Dead-letter targets are authorised: naming a queue as `x-dead-letter-queue`, when declaring a queue
or changing it, needs write permission on that target, since dead-lettering publishes into it."""

from __future__ import annotations

import asyncio

import pytest
from security_helpers import ADMIN, add_user, call

from cli.node_processes import ProcessCluster
from quorumq.auth import basic_header

CAROL = basic_header("carol", "carol-pw")
OWN = "carol-.*"


@pytest.fixture(scope="module")
def carol(secured: ProcessCluster) -> ProcessCluster:
    """carol: every permission on `carol-*` queues; `admin-dlq` belongs to the administrator."""
    asyncio.run(add_user(secured.urls, "carol", "carol-pw", {"configure": OWN, "write": OWN, "read": OWN}))
    asyncio.run(_declare_admin_dlq(secured.urls[0]))
    return secured


async def _declare_admin_dlq(url: str) -> None:
    assert (await call("PUT", url + "/api/queues/admin-dlq", authorization=ADMIN)).status == 201


def _dead_lettering_to(target: str | None) -> dict:
    return {"arguments": {"x-dead-letter-queue": target}}


async def test_declaring_a_queue_that_dead_letters_into_a_queue_without_write_permission_is_403(
    carol: ProcessCluster,
) -> None:
    url = carol.urls[1] + "/api/queues/carol-work"
    refused = await call("PUT", url, authorization=CAROL, json=_dead_lettering_to("admin-dlq"))
    assert refused.status == 403, refused.body
    assert refused.body["error"] == "forbidden"
    assert "write" in refused.body["reason"] and "'admin-dlq'" in refused.body["reason"]
    assert (await call("GET", url, authorization=ADMIN)).status == 404
    allowed = await call("PUT", url, authorization=CAROL, json=_dead_lettering_to("carol-dlq"))
    assert allowed.status == 201, allowed.body


async def test_changing_the_dead_letter_target_needs_write_permission_on_the_new_one(
    carol: ProcessCluster,
) -> None:
    url = carol.urls[2] + "/api/queues/carol-changing"
    assert (await call("PUT", url, authorization=CAROL, json=_dead_lettering_to("carol-dlq"))).status == 201
    refused = await call("PATCH", url, authorization=CAROL, json=_dead_lettering_to("admin-dlq"))
    assert refused.status == 403, refused.body
    assert "write" in refused.body["reason"] and "'admin-dlq'" in refused.body["reason"]
    kept = await call("GET", url, authorization=CAROL)
    assert kept.body["arguments"]["x-dead-letter-queue"] == "carol-dlq"
    removed = await call("PATCH", url, authorization=CAROL, json=_dead_lettering_to(None))
    assert removed.status == 200, removed.body
    administrator = await call("PATCH", url, authorization=ADMIN, json=_dead_lettering_to("admin-dlq"))
    assert administrator.status == 200, administrator.body


@pytest.mark.parametrize("target", ["bad name!", "carol-dlq\n", "c" * 256])
async def test_a_dead_letter_target_is_a_valid_queue_name(carol: ProcessCluster, target: str) -> None:
    answer = await call(
        "PUT", carol.urls[0] + "/api/queues/carol-named", authorization=CAROL, json=_dead_lettering_to(target)
    )
    assert answer.status in (400, 414), answer.body
