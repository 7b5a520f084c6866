"""Names and permission patterns: a queue name is validated (length, alphabet) before any permission
pattern sees it; patterns match whole names (RabbitMQ's anchoring) with RE2, in linear time; a pattern
RE2 cannot compile is refused when it is set."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import pytest
from security_helpers import ADMIN, add_user, call

from cli.node_processes import ProcessCluster
from quorumq.auth import basic_header

BOB = basic_header("bob", "bob-pw")
EVE = basic_header("eve", "eve-pw")
CATASTROPHIC = "^([a-z0-9]+-?)*$"  # exponential for a backtracking engine on a name it does not match
PERMISSIONS = {
    "bob": {"configure": "^orders$", "write": "orders", "read": "bob-.*"},
    "eve": {"write": CATASTROPHIC},
}


@pytest.fixture(scope="module")
def users(secured: ProcessCluster) -> ProcessCluster:
    """bob and eve with the PERMISSIONS above; queues `orders` and `my-orders`."""
    asyncio.run(_create_users(secured))
    return secured


async def _create_users(secured: ProcessCluster) -> None:
    for name, permissions in PERMISSIONS.items():
        await add_user(secured.urls, name, f"{name}-pw", permissions)
    for queue in ("orders", "my-orders"):
        assert (await call("PUT", f"{secured.urls[0]}/api/queues/{queue}", authorization=ADMIN)).status == 201


async def test_a_trailing_newline_does_not_pass_an_anchored_pattern(users: ProcessCluster) -> None:
    declared = await call("PUT", users.urls[1] + "/api/queues/orders%0A", authorization=BOB)
    assert declared.status == 400, declared.body
    published = await call(
        "POST",
        users.urls[1] + "/api/queues/orders%0A/messages",
        authorization=BOB,
        json={"messages": [{"body": "x"}]},
    )
    assert published.status == 400, published.body
    listed = await call("GET", users.urls[1] + "/api/queues", authorization=ADMIN)
    assert "orders\n" not in {queue["name"] for queue in listed.body}


async def test_patterns_match_whole_names(users: ProcessCluster) -> None:
    base = users.urls[2] + "/api/queues"
    one = {"messages": [{"body": "m"}]}
    assert (await call("POST", base + "/orders/messages", authorization=BOB, json=one)).status == 201
    assert (await call("POST", base + "/my-orders/messages", authorization=BOB, json=one)).status == 403
    assert (
        await call("POST", base + "/bob-1/get", authorization=BOB, json={})
    ).status == 404  # allowed, absent
    assert (await call("POST", base + "/xbob-1/get", authorization=BOB, json={})).status == 403


async def test_a_long_adversarial_name_is_answered_while_other_requests_are_served(
    users: ProcessCluster,
) -> None:
    name = "a" * 200 + "_"  # a valid name the pattern cannot match: a backtracking engine tries 2^200 ways
    url = users.urls[0]
    refused, whoami = await asyncio.gather(
        call(
            "POST", f"{url}/api/queues/{name}/messages", authorization=EVE, json={"messages": [{"body": "x"}]}
        ),
        call("GET", url + "/api/whoami", authorization=ADMIN),
    )
    assert refused.status == 403, refused.body
    assert whoami.status == 200
    allowed = await call(
        "POST", f"{url}/api/queues/my-orders/messages", authorization=EVE, json={"messages": [{"body": "y"}]}
    )
    assert allowed.status == 201, allowed.body


@pytest.mark.parametrize(
    "name, status", [("n" * 256, 414), ("bad!name", 400), ("tab%09name", 400), ("-leading-dash", 400)]
)
async def test_names_are_checked_before_permissions(users: ProcessCluster, name: str, status: int) -> None:
    answer = await call("POST", f"{users.urls[1]}/api/queues/{name}/get", authorization=EVE, json={})
    assert answer.status == status, answer.body


@pytest.mark.parametrize("pattern", ["(a)\\1", "(?=orders)orders", "(?<!x)y", "("])
async def test_a_pattern_re2_cannot_compile_is_refused_when_set(users: ProcessCluster, pattern: str) -> None:
    answer = await call(
        "PUT", users.urls[0] + "/api/users/eve/permissions", authorization=ADMIN, json={"write": pattern}
    )
    assert answer.status == 400, answer.body
    assert "write" in answer.body["reason"] and "regular expression" in answer.body["reason"]


async def test_a_user_name_with_a_trailing_newline_is_refused(users: ProcessCluster) -> None:
    answer = await call(
        "PUT", users.urls[0] + "/api/users/bob%0A", authorization=ADMIN, json={"password": "p"}
    )
    assert answer.status == 400, answer.body


@pytest.mark.parametrize("name", ["c" * 256, "bad/name", "tab\tname", "-leading-dash", ""])
async def test_w12_a_durable_consumer_name_is_validated_like_a_queue_name(
    users: ProcessCluster, name: str
) -> None:
    assert (await call("PUT", users.urls[0] + "/api/queues/bob-durable", authorization=ADMIN)).status in (
        201,
        204,
    )
    consumers = users.urls[0] + "/api/queues/bob-durable/consumers"
    refused = await call("POST", consumers, authorization=BOB, json={"durable": True, "name": name})
    assert refused.status == 400, refused.body
    listed = await call("GET", consumers, authorization=ADMIN)
    assert name not in {consumer["tag"] for consumer in listed.body}
    fine = await call("POST", consumers, authorization=BOB, json={"durable": True, "name": "c" * 255})
    assert fine.status == 201, fine.body


async def test_w12_a_checkout_does_not_register_a_durable_consumer_of_a_bad_name(
    users: ProcessCluster,
) -> None:
    assert (await call("PUT", users.urls[0] + "/api/queues/bob-checkout", authorization=ADMIN)).status in (
        201,
        204,
    )
    consumers = users.urls[0] + "/api/queues/bob-checkout/consumers"
    refused = await call("POST", consumers + "/" + "c" * 256 + "/checkout", authorization=BOB, json={})
    assert refused.status == 400, refused.body
    assert (await call("GET", consumers, authorization=ADMIN)).body == []


@pytest.mark.parametrize("pattern", [".{1000}x" * 10, "a" * 1025], ids=["large-program", "long"])
async def test_w7_a_queue_filter_beyond_the_pattern_limits_is_refused_and_logs_nothing(
    users: ProcessCluster, pattern: str
) -> None:
    node = users.nodes[2]
    logged = node.log_path.stat().st_size
    url = f"{node.url}/api/queues?use_regex=true&name={quote(pattern)}"
    answer = await call("GET", url, authorization=BOB)
    assert answer.status == 400, answer.body
    assert "name" in answer.body["reason"], answer.body
    with node.log_path.open("rb") as log:
        log.seek(logged)
        assert b"DFA out of memory" not in log.read()


async def test_w7_a_queue_filter_within_the_limits_lists_what_it_matches(users: ProcessCluster) -> None:
    answer = await call(
        "GET", f"{users.urls[0]}/api/queues?use_regex=true&name={quote('^my-[a-z]+$')}", authorization=ADMIN
    )
    assert answer.status == 200, answer.body
    assert [queue["name"] for queue in answer.body] == ["my-orders"]
