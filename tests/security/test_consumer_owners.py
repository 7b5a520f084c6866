"""W11: a consumer belongs to the user who registered it. Another reader of the queue who learns its tag
(or a durable consumer's name) can neither poll, settle, touch nor cancel it, over HTTP or on a stream:
it gets 404, the answer for a consumer that does not exist, so the refusal tells nothing. A durable
consumer's name is its owner's own: another user naming it gets a consumer of its own. Administrators
may act on any consumer. Not closed yet: settling by message id (docs/decisions/0022). Real nodes, two
real users."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import msgpack
import pytest
from security_helpers import ADMIN, add_user, call

from cli.node_processes import ProcessCluster
from quorumq.auth import basic_header

QUEUE = "w11-q"
ALICE = basic_header("w11-alice", "w11-alice-pw")
BOB = basic_header("w11-bob", "w11-bob-pw")


@pytest.fixture(scope="module")
def leader(secured: ProcessCluster) -> str:
    """Alice and Bob both read (and write) QUEUE; the URL of its leader, with 5 messages in it."""

    async def setup() -> str:
        for user in ("w11-alice", "w11-bob"):
            await add_user(secured.urls, user, f"{user}-pw", {"read": f"^{QUEUE}$", "write": f"^{QUEUE}$"})
        base = secured.urls[0]
        assert (await call("PUT", f"{base}/api/queues/{QUEUE}", authorization=ADMIN, json={})).status == 201
        messages = [{"body": f"m{i}"} for i in range(5)]
        published = await call(
            "POST", f"{base}/api/queues/{QUEUE}/messages", authorization=ADMIN, json={"messages": messages}
        )
        assert published.status == 201, published.body
        shown = await call("GET", f"{base}/api/queues/{QUEUE}", authorization=ADMIN)
        return secured.node(shown.body["leader"]).url

    return asyncio.run(setup())


async def _alices_consumer(leader: str) -> str:
    registered = await call(
        "POST", f"{leader}/api/queues/{QUEUE}/consumers", authorization=ALICE, json={"prefetch": 1}
    )
    assert registered.status == 201, registered.body
    return str(registered.body["consumer"])


async def test_w11_another_user_cannot_poll_settle_touch_or_cancel_a_consumer_by_its_tag(leader: str) -> None:
    tag = await _alices_consumer(leader)
    consumer = f"{leader}/api/queues/{QUEUE}/consumers/{tag}"
    polled = await call("GET", consumer + "/deliveries?wait=5", authorization=ALICE)
    assert polled.status == 200 and len(polled.body) == 1, polled.body
    held = polled.body[0]["id"]
    refusals = [
        await call("GET", consumer + "/deliveries?wait=0", authorization=BOB),
        await call("POST", consumer + "/ack", authorization=BOB, json={"ids": [held]}),
        await call("POST", consumer + "/nack", authorization=BOB, json={"ids": [held]}),
        await call("POST", consumer + "/touch", authorization=BOB, json={"ids": [held]}),
        await call("DELETE", consumer, authorization=BOB),
    ]
    unknown = await call("GET", f"{leader}/api/queues/{QUEUE}/consumers/nobody/deliveries", authorization=BOB)
    assert [r.status for r in refusals] == [404] * 5, refusals
    assert {r.body["error"] for r in refusals} == {unknown.body["error"]}
    acked = await call("POST", consumer + "/ack", authorization=ALICE, json={"ids": [held]})
    assert acked.status == 200 and "warning" not in acked.body, acked.body  # still Alice's, still held
    assert (await call("DELETE", consumer, authorization=ADMIN)).status == 204  # administrators may


@contextlib.asynccontextmanager
async def _stream(url: str, authorization: str) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    async with (
        aiohttp.ClientSession(headers={"Authorization": authorization}) as session,
        session.ws_connect(url + "/api/stream", max_msg_size=0) as ws,
    ):
        assert (await _frame(ws, op="hello", versions=[1]))["op"] == "hello"
        yield ws


async def _frame(ws: aiohttp.ClientWebSocketResponse, **frame: Any) -> dict[str, Any]:
    await ws.send_bytes(msgpack.packb(frame))
    answer = msgpack.unpackb((await ws.receive(20)).data, raw=False)
    assert isinstance(answer, dict)
    return answer


async def test_w11_another_user_cannot_resume_settle_or_cancel_a_consumer_on_a_stream(leader: str) -> None:
    tag = await _alices_consumer(leader)
    async with _stream(leader, BOB) as ws:
        frames = [
            await _frame(ws, op="consume", id=1, queue=QUEUE, tag=tag),
            await _frame(ws, op="ack", id=2, queue=QUEUE, tag=tag, ids=[1]),
            await _frame(ws, op="touch", id=3, queue=QUEUE, tag=tag, ids=[1]),
            await _frame(ws, op="cancel", id=4, queue=QUEUE, tag=tag),
        ]
    assert [(f["op"], f.get("status")) for f in frames] == [("error", 404)] * 4, frames
    assert (
        await call("DELETE", f"{leader}/api/queues/{QUEUE}/consumers/{tag}", authorization=ALICE)
    ).status == 204


async def test_w11_a_durable_consumer_s_name_reaches_only_its_owner(leader: str) -> None:
    durable = f"{leader}/api/queues/{QUEUE}/consumers/w11-job"
    taken = await call("POST", durable + "/checkout", authorization=ALICE, json={"max": 2})
    assert taken.status == 200 and taken.body == {"consumer": "w11-job", "settled": 0, "end": 2, "bytes": 4}
    full_name = "w11-job~w11-alice"  # as the queue state keeps it, and lists it
    listed = await call("GET", f"{leader}/api/queues/{QUEUE}/consumers", authorization=ALICE)
    assert full_name in [consumer["tag"] for consumer in listed.body], listed.body
    for target in ("w11-job", full_name):
        base = f"{leader}/api/queues/{QUEUE}/consumers/{target}"
        assert (await call("GET", base + "/log?from=0&to=2", authorization=BOB)).status == 404
        assert (await call("POST", base + "/settle", authorization=BOB, json={"below": 2})).status == 404
        assert (await call("DELETE", base, authorization=BOB)).status == 404
    bobs = await call("POST", durable + "/checkout", authorization=BOB, json={"max": 1})
    assert bobs.status == 200 and (bobs.body["settled"], bobs.body["end"]) == (0, 1), bobs.body  # his own
    log = await call("GET", durable + "/log?from=0&to=2", authorization=ALICE)
    assert log.status == 200 and len(log.body) == 2, log.body  # Alice's deliveries are untouched
    admin_log = await call(
        "GET", f"{leader}/api/queues/{QUEUE}/consumers/{full_name}/log?from=0&to=2", authorization=ADMIN
    )
    assert admin_log.status == 200, admin_log.body
    assert (await call("DELETE", durable, authorization=ALICE)).status == 204


async def test_w11_not_closed_a_reader_settles_by_id_a_message_another_users_consumer_holds(
    leader: str,
) -> None:
    """The gap docs/decisions/0022 leaves open: the tagless ack (meant for a manual-ack get) applies to
    whatever holds the ids but a durable consumer, so Bob, a reader of the queue, acks a message Alice's
    consumer holds. When this is closed, this test is to say Bob is refused."""
    queue = f"{leader}/api/queues/{QUEUE}"
    published = await call(
        "POST", queue + "/messages", authorization=ADMIN, json={"messages": [{"body": "g"}]}
    )
    assert published.status == 201, published.body
    tag = await _alices_consumer(leader)
    polled = await call("GET", f"{queue}/consumers/{tag}/deliveries?wait=5", authorization=ALICE)
    assert polled.status == 200 and len(polled.body) == 1, polled.body
    held = polled.body[0]["id"]
    before = (await call("GET", queue, authorization=ADMIN)).body["messages"]
    taken = await call("POST", queue + "/ack", authorization=BOB, json={"ids": [held]})
    assert taken.status == 200, taken.body
    after = (await call("GET", queue, authorization=ADMIN)).body["messages"]
    assert after == before - 1, (before, after)  # gone, though Alice's consumer held it
    late = await call("POST", f"{queue}/consumers/{tag}/ack", authorization=ALICE, json={"ids": [held]})
    assert late.status == 200 and "warning" in late.body, late.body
    assert (await call("DELETE", f"{queue}/consumers/{tag}", authorization=ALICE)).status == 204
