"""Reads answer within a byte budget (W8): a get, a consumer's poll, a browse and a stream consumer's
deliveries hold messages while their bodies add up to at most `max_bytes` (8 MiB unless the request
says otherwise; the first message always, so a reader always makes progress), and an auto-ack get
removes from the queue only what it answers."""

from __future__ import annotations

import aiohttp
import msgpack
from security_helpers import ADMIN, call

from cli.node_processes import ProcessCluster

KIB = 1024
BIG = 3 * 1024 * KIB  # three of these pass the default budget of 8 MiB


async def _queue_of(cluster: ProcessCluster, name: str, sizes: list[int]) -> str:
    """A queue of one replica holding a message of each size (bodies `<index>` then filler), on the
    first node; its URL."""
    url = f"{cluster.urls[0]}/api/queues/{name}"
    declared = await call(
        "PUT", url, authorization=ADMIN, json={"arguments": {"x-quorum-initial-group-size": 1}}
    )
    assert declared.status == 201, declared.body
    for index, size in enumerate(sizes):
        body = f"{index}:".ljust(size, "x")
        published = await call(
            "POST", url + "/messages", authorization=ADMIN, json={"messages": [{"body": body}]}
        )
        assert published.status == 201, published.body
    return url


def _indexes(rows: list[dict[str, object]]) -> list[int]:
    return [int(str(row["body"]).split(":")[0]) for row in rows]


async def test_w8_an_auto_ack_get_answers_within_its_budget_and_removes_only_what_it_answers(
    secured: ProcessCluster,
) -> None:
    url = await _queue_of(secured, "budget-get", [300 * KIB] * 5)
    answered: list[int] = []
    for _ in range(5):
        got = await call(
            "POST",
            url + "/get",
            authorization=ADMIN,
            json={"count": 5, "ack": "auto", "max_bytes": 700 * KIB},
        )
        assert got.status == 200, got.body
        if not got.body:
            break
        assert sum(len(row["body"]) for row in got.body) <= 700 * KIB or len(got.body) == 1, _indexes(
            got.body
        )
        answered += _indexes(got.body)
    assert answered == [0, 1, 2, 3, 4]  # each once, in order: nothing removed unanswered


async def test_w8_a_get_answers_at_least_one_message_larger_than_its_budget(secured: ProcessCluster) -> None:
    url = await _queue_of(secured, "budget-one", [300 * KIB, 10 * KIB])
    got = await call(
        "POST", url + "/get", authorization=ADMIN, json={"count": 2, "ack": "auto", "max_bytes": 1}
    )
    assert _indexes(got.body) == [0], got.body
    rest = await call("POST", url + "/get", authorization=ADMIN, json={"count": 2, "ack": "auto"})
    assert _indexes(rest.body) == [1], rest.body


async def test_w8_a_poll_answers_within_the_default_budget_and_the_rest_comes_next(
    secured: ProcessCluster,
) -> None:
    url = await _queue_of(secured, "budget-poll", [BIG] * 3)
    registered = await call("POST", url + "/consumers", authorization=ADMIN, json={"prefetch": 10})
    assert registered.status == 201, registered.body
    deliveries = f"{url}/consumers/{registered.body['consumer']}/deliveries?max=10&wait=5"
    first = await call("GET", deliveries, authorization=ADMIN)
    assert _indexes(first.body) == [0, 1], _indexes(first.body)
    second = await call("GET", deliveries, authorization=ADMIN)
    assert _indexes(second.body) == [2], _indexes(second.body)


async def test_w8_a_browse_answers_within_its_budget(secured: ProcessCluster) -> None:
    url = await _queue_of(secured, "budget-browse", [300 * KIB] * 4)
    browsed = await call("GET", url + f"/messages?max_bytes={700 * KIB}", authorization=ADMIN)
    assert _indexes(browsed.body) == [0, 1], _indexes(browsed.body)
    everything = await call("GET", url + "/messages", authorization=ADMIN)
    assert _indexes(everything.body) == [0, 1, 2, 3]


async def test_w8_stream_deliveries_come_in_frames_within_the_default_budget(secured: ProcessCluster) -> None:
    url = await _queue_of(secured, "budget-stream", [BIG] * 3)
    leader = secured.node((await call("GET", url, authorization=ADMIN)).body["leader"]).url
    async with (
        aiohttp.ClientSession(headers={"Authorization": ADMIN}) as session,
        session.ws_connect(leader + "/api/stream", max_msg_size=0) as ws,
    ):
        await ws.send_bytes(msgpack.packb({"op": "hello", "versions": [1]}))
        assert msgpack.unpackb((await ws.receive(20)).data)["op"] == "hello"
        await ws.send_bytes(
            msgpack.packb({"op": "consume", "id": 1, "queue": "budget-stream", "prefetch": 10})
        )
        frames: list[list[int]] = []
        while sum(len(f) for f in frames) < 3:
            frame = msgpack.unpackb((await ws.receive(20)).data)
            if frame["op"] == "deliver":
                frames.append([int(m["body"].split(b":")[0]) for m in frame["messages"]])
    assert frames == [[0, 1], [2]], frames
