"""Dead-letter targets are authorised: naming a queue as `x-dead-letter-queue`, when declaring a queue
or changing it, needs write permission on that target, since dead-lettering publishes into it, and
naming an `x-dead-letter-exchange` what a publish through it needs; a target named before stays in force
until it is changed."""

from __future__ import annotations

import asyncio

import pytest
from security_helpers import ADMIN, add_user, call, eventually_body, eventually_status

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


async def test_naming_a_dead_letter_exchange_needs_what_a_publish_through_it_needs(
    carol: ProcessCluster,
) -> None:
    url = carol.urls[2] + "/api/queues/carol-routed"
    for arguments, exchange in [
        ({"x-dead-letter-exchange": "admin-dlx"}, "exchange 'admin-dlx'"),
        ({"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "admin-dlq"}, "queue 'admin-dlq'"),
    ]:
        refused = await call("PUT", url, authorization=CAROL, json={"arguments": arguments})
        assert refused.status == 403, refused.body
        assert "write" in refused.body["reason"] and exchange in refused.body["reason"], refused.body
    bad = await call("PUT", url, authorization=CAROL, json={"arguments": {"x-dead-letter-exchange": "c\n"}})
    assert bad.status == 400 and "x-dead-letter-exchange" in bad.body["reason"], bad.body
    allowed = await call(
        "PUT", url, authorization=CAROL, json={"arguments": {"x-dead-letter-exchange": "carol-dlx"}}
    )
    assert allowed.status == 201, allowed.body
    moved = {"x-dead-letter-exchange": None, "x-dead-letter-queue": "admin-dlq"}
    refused = await call("PATCH", url, authorization=CAROL, json={"arguments": moved})
    assert refused.status == 403, refused.body


async def _dead_letter_one(url: str, credentials: str, body: str) -> None:
    """Publish `body` to the queue at `url` and reject it (nack without requeue): it is dead-lettered."""
    published = await call(
        "POST", url + "/messages", authorization=credentials, json={"messages": [{"body": body}]}
    )
    assert published.status == 201, published.body
    got = await call("POST", url + "/get", authorization=credentials, json={"count": 1})
    assert [m["body"] for m in got.body] == [body], got.body
    rejected = await call(
        "POST", url + "/nack", authorization=credentials, json={"ids": [got.body[0]["id"]], "requeue": False}
    )
    assert rejected.status == 200, rejected.body


async def test_a_target_set_before_the_check_stays_in_force_until_the_target_itself_is_changed(
    secured: ProcessCluster,
) -> None:
    """A queue whose dead-letter target its user may not write (set by an earlier version, or, as here,
    before the user lost write permission on it) keeps dead-lettering there, also once its other
    arguments are changed; setting that target again is 403, removing it is allowed."""
    dave = basic_header("dave", "dave-pw")
    own = "dave-.*"
    await add_user(
        secured.urls, "dave", "dave-pw", {"configure": own, "write": own + "|legacy-dlq", "read": own}
    )
    dlq = secured.urls[0] + "/api/queues/legacy-dlq"
    assert (await call("PUT", dlq, authorization=ADMIN)).status == 201
    url = secured.urls[1] + "/api/queues/dave-legacy"
    assert (await call("PUT", url, authorization=dave, json=_dead_lettering_to("legacy-dlq"))).status == 201
    revoked = await call(
        "PUT", secured.urls[0] + "/api/users/dave/permissions", authorization=ADMIN,
        json={"configure": own, "write": own, "read": own},
    )  # fmt: skip
    assert revoked.status == 204, revoked.body
    for node_url in secured.urls:
        await eventually_status(node_url + "/api/queues/legacy-dlq", dave, 403)
    await _dead_letter_one(url, dave, "still-dead-lettered")
    await eventually_body(dlq, lambda body: body["messages"] == 1)
    changed = await call("PATCH", url, authorization=dave, json={"arguments": {"x-max-length": 100}})
    assert changed.status == 200, changed.body
    assert changed.body["arguments"]["x-dead-letter-queue"] == "legacy-dlq", changed.body
    await _dead_letter_one(url, dave, "after-another-change")
    await eventually_body(dlq, lambda body: body["messages"] == 2)
    set_again = await call("PATCH", url, authorization=dave, json=_dead_lettering_to("legacy-dlq"))
    assert set_again.status == 403, set_again.body
    removed = await call("PATCH", url, authorization=dave, json=_dead_lettering_to(None))
    assert removed.status == 200, removed.body
    assert "x-dead-letter-queue" not in removed.body["arguments"], removed.body
