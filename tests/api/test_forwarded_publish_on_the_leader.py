"""The leader's side of a publish forwarded over the peer transport (`api/publishing.py`), on a real
in-process node: the user the forwarding node vouches for is granted by the publish route's own rule,
the publish goes through the same door as one made over HTTP, and every refusal is the HTTP answer the
leader would have given."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from in_process_node import InProcessNode, in_process_node

from api.forwarded_publish import PUBLISH
from api.publishing import peer_server

MESSAGE = [b"hello", {"k": "v"}, "utf8", None]


@pytest.fixture
async def leader(tmp_path: Path) -> AsyncIterator[InProcessNode]:
    """A node leading `writable` and `forbidden`, with a user `alice` who may write only the first."""
    async with in_process_node(tmp_path) as node:
        await node.declare("writable")
        await node.declare("forbidden")
        status, body = await node.call("PUT", "/api/users/alice", json={"password": "alice-password"})
        assert status == 201, body
        status, body = await node.call("PUT", "/api/users/alice/permissions", json={"write": "writable"})
        assert status == 204, body
        yield node


async def _forwarded(node: InProcessNode, queue: str, user: str) -> list[Any]:
    """The reply the node gives a peer that forwards it one message to `queue` for `user`."""
    return await peer_server(node.http.server.app)("node2", [PUBLISH, queue, user, 1, "p", 1, [MESSAGE]])


async def test_a_forwarded_publish_is_enqueued_and_answered_as_over_http(leader: InProcessNode) -> None:
    assert await _forwarded(leader, "writable", "alice") == [201, {"ids": [1], "duplicate": False}]
    assert await _forwarded(leader, "writable", "alice") == [201, {"ids": [1], "duplicate": True}]  # a resend
    status, browsed = await leader.call("GET", "/api/queues/writable/messages")
    assert status == 200 and [(m["body"], m["headers"]) for m in browsed] == [("hello", {"k": "v"})]


async def test_the_vouched_user_needs_the_publish_routes_permission(leader: InProcessNode) -> None:
    status, body = await _forwarded(leader, "forbidden", "alice")
    assert (status, body["error"]) == (403, "forbidden"), body
    assert body["reason"] == "user 'alice' lacks write permission on queue 'forbidden'"
    assert (await leader.call("GET", "/api/queues/forbidden"))[1]["messages"] == 0


async def test_a_user_this_node_does_not_know_is_401(leader: InProcessNode) -> None:
    status, body = await _forwarded(leader, "writable", "mallory")
    assert (status, body["error"]) == (401, "unauthorized"), body


async def test_a_queue_no_node_knows_is_404_as_over_http(leader: InProcessNode) -> None:
    status, body = await _forwarded(leader, "nowhere", "guest")
    assert (status, body["error"]) == (404, "not_found"), body


async def test_a_malformed_request_is_400(leader: InProcessNode) -> None:
    serve = peer_server(leader.http.server.app)
    malformed = (
        None,
        [PUBLISH],
        ["other", "writable", "alice", 1, None, None, [MESSAGE]],
        [PUBLISH, "writable", "alice", 1, None, None, [[b"x"]]],
        [PUBLISH, "writable", "alice", 1, None, None, [["text, not bytes", {}, "utf8", None]]],
        [PUBLISH, "writable", "alice", 1, None, None, [[b"x", [], "utf8", None]]],
        [PUBLISH, "writable", "alice", 1, None, None, [[b"x", {}, "rot13", None]]],
        [PUBLISH, "writable", "alice", 1, None, None, [[b"x", {}, "utf8", "soon"]]],
        [PUBLISH, "writable", "alice", 1, 7, 1, [MESSAGE]],
        [PUBLISH, "writable", "alice", 1, None, None, [MESSAGE], None, [256]],  # a priority too high
        [PUBLISH, "writable", "alice", 1, None, None, [MESSAGE], None, [1, 2]],  # one per message
        [PUBLISH, "writable", "alice", 1, None, None, [MESSAGE], None, [1], "more"],
    )
    for request in malformed:
        status, body = await serve("node2", request)
        assert (status, body["error"]) == (400, "bad_request"), (request, body)
    assert (await leader.call("GET", "/api/queues/writable"))[1]["messages"] == 0


async def test_a_forwarded_publish_carries_priorities_after_its_delays(leader: InProcessNode) -> None:
    serve = peer_server(leader.http.server.app)
    low, high = [b"low", {}, "utf8", None], [b"high", {}, "utf8", None]
    request = [PUBLISH, "writable", "alice", 1, None, None, [low, high], None, [0, 9]]
    assert await serve("node2", request) == [201, {"ids": [1, 2], "duplicate": False}]
    status, got = await leader.call("POST", "/api/queues/writable/get", json={"count": 2, "ack": "auto"})
    assert status == 200 and [(m["body"], m.get("priority", 0)) for m in got] == [("high", 9), ("low", 0)]
