"""A publish's `wait` (issue 40, slice 4; rsyslog's enqueue timeout) on a real in-process node: a publish
to a full `reject-publish` queue waits on the queue's leader for room (an applied get, purge or new limit
makes it), retried with its publisher and seq so it is enqueued once, and is answered 507 as before once
its wait is up; over HTTP, on the stream and forwarded by a peer alike. The state machine is not asked
anything new: the door retries."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
import pytest_asyncio
from in_process_node import InProcessNode, in_process_node
from support.eventually import eventually

from api.forwarded_publish import PUBLISH
from api.publishing import peer_server
from cluster.queues.queue_door import QueueDoor

pytestmark = pytest.mark.asyncio(loop_scope="module")

FULL_AT_TWO = {"x-max-length": 2, "x-overflow": "reject-publish"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessNode]:
    """One in-process node for the module; each test declares queues of its own."""
    async with in_process_node(Path(tmp_path_factory.mktemp("wait"))) as running:
        yield running


async def _full(api: InProcessNode, queue: str) -> QueueDoor:
    """A reject-publish queue holding its two messages, `one` and `two` (ids 1 and 2)."""
    door = await api.declare(queue, FULL_AT_TWO)
    status, body = await api.call("POST", f"/api/queues/{queue}/messages", json=_publish("one", "two"))
    assert status == 201, body
    return door


def _publish(*bodies: str, **fields: Any) -> dict[str, Any]:
    return {"messages": [{"body": body} for body in bodies], **fields}


async def _room_by_a_get(api: InProcessNode, queue: str) -> None:
    status, rows = await api.call("POST", f"/api/queues/{queue}/get", json={"count": 1})
    assert status == 200 and [r["body"] for r in rows] == ["one"]
    assert await api.call("POST", f"/api/queues/{queue}/ack", json={"ids": [rows[0]["id"]]}) == (
        200,
        {"ok": True},
    )


async def _room_by_a_purge(api: InProcessNode, queue: str) -> None:
    assert await api.call("DELETE", f"/api/queues/{queue}/contents") == (200, {"purged": 2})


async def _room_by_a_new_limit(api: InProcessNode, queue: str) -> None:
    status, body = await api.call("PATCH", f"/api/queues/{queue}", json={"arguments": {"x-max-length": 3}})
    assert status == 200, body


@pytest.mark.parametrize("make_room", [_room_by_a_get, _room_by_a_purge, _room_by_a_new_limit])
async def test_a_waiting_publish_is_enqueued_once_room_is_made_and_its_seq_is_kept(
    api: InProcessNode, make_room: Callable[[InProcessNode, str], Awaitable[None]]
) -> None:
    queue = f"w-{make_room.__name__.removeprefix('_room_by_')}"
    door = await _full(api, queue)
    waiting = asyncio.ensure_future(
        api.call(
            "POST", f"/api/queues/{queue}/messages", json=_publish("three", publisher="p", seq=1, wait=5000)
        )
    )
    await eventually(lambda: door.publishes_waiting == 1, "the publish to wait for room")
    await make_room(api, queue)
    assert await waiting == (201, {"ids": [3], "duplicate": False})
    assert door.publishes_waiting == 0
    again = await api.call(
        "POST", f"/api/queues/{queue}/messages", json=_publish("three", publisher="p", seq=1)
    )
    assert again == (201, {"ids": [3], "duplicate": True})  # the retries inside the wait kept its seq
    _, held = await api.call("GET", f"/api/queues/{queue}/messages")
    assert [m["body"] for m in held].count("three") == 1


async def test_a_publish_whose_wait_runs_out_is_answered_507_and_enqueues_nothing(api: InProcessNode) -> None:
    door = await _full(api, "w-out")
    loop = asyncio.get_running_loop()
    started = loop.time()
    status, body = await api.call("POST", "/api/queues/w-out/messages", json=_publish("three", wait=200))
    assert (status, body["error"]) == (507, "reject-publish"), body
    assert loop.time() - started >= 0.2 and door.publishes_waiting == 0
    assert door.stats().messages == 2


@pytest.mark.parametrize("wait", [-1, 30001, "soon", 1.5])
async def test_a_wait_out_of_range_is_400_naming_it(api: InProcessNode, wait: object) -> None:
    await api.declare("w-bad", FULL_AT_TWO)
    status, body = await api.call("POST", "/api/queues/w-bad/messages", json=_publish("x", wait=wait))
    assert (status, body["error"]) == (400, "bad_request") and "wait" in body["reason"], body


async def test_a_publish_on_the_stream_waits_as_over_http(api: InProcessNode) -> None:
    door = await _full(api, "w-stream")
    async with api.http.ws_connect("/api/stream") as ws:
        await ws.send_bytes(msgpack.packb({"op": "hello", "versions": [1]}))
        assert msgpack.unpackb(await ws.receive_bytes())["op"] == "hello"
        frame = {"op": "publish", "id": 7, "queue": "w-stream", **_publish("three", wait=5000)}
        await ws.send_bytes(msgpack.packb(frame))
        await eventually(lambda: door.publishes_waiting == 1, "the streamed publish to wait for room")
        await _room_by_a_get(api, "w-stream")
        answer = msgpack.unpackb(await ws.receive_bytes())
    assert (answer["op"], answer["id"], answer["ids"]) == ("confirm", 7, [3])


async def test_a_publish_forwarded_by_a_peer_carries_its_wait(api: InProcessNode) -> None:
    door = await _full(api, "w-forwarded")
    serve = peer_server(api.http.server.app)
    message = [b"three", {}, "utf8", None]
    request = [PUBLISH, "w-forwarded", "guest", 1, "p", 1, [message], None, None, 5000]
    forwarded = asyncio.ensure_future(serve("node2", request))
    await eventually(lambda: door.publishes_waiting == 1, "the forwarded publish to wait for room")
    await _room_by_a_get(api, "w-forwarded")
    assert await forwarded == [201, {"ids": [3], "duplicate": False}]
    for wait in (-1, 30001, "soon"):
        refused = await serve("node2", [*request[:9], wait])
        assert (refused[0], refused[1]["error"]) == (400, "bad_request"), refused
