"""Message bodies cross the wire intact, in both directions: in msgpack as they are, in JSON bytes as
base64 and str as utf8."""

from typing import Any

import msgpack
import pytest
from aiohttp import web
from client_fakes import published, serve
from hypothesis import given
from hypothesis import strategies as st

from quorumq import Client, Delivery, Message, NotFoundError, Wire
from quorumq.messages import decode_body, decode_delivery, encode_message

PUBLISHED = [b"\x00\xff", "héllo", Message("t", headers={"k": 1}, expiration=500)]
ON_THE_WIRE = {
    "json": (
        "application/json",
        [
            {"body": "AP8=", "encoding": "base64"},
            {"body": "héllo", "encoding": "utf8"},
            {"body": "t", "encoding": "utf8", "headers": {"k": 1}, "expiration": 500},
        ],
    ),
    "msgpack": (
        "application/msgpack",
        [{"body": b"\x00\xff"}, {"body": "héllo"}, {"body": "t", "headers": {"k": 1}, "expiration": 500}],
    ),
}


@pytest.mark.parametrize("wire", ["json", "msgpack"])
async def test_publish_sends_bytes_as_base64_in_json_and_as_bin_in_msgpack(wire: Wire) -> None:
    received: list[tuple[str, dict[str, Any]]] = []

    async def publish(request: web.Request) -> web.Response:
        body = await published(request)
        received.append((request.content_type, body))
        return web.json_response({"ids": list(range(len(body["messages"])))}, status=201)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    async with serve(app) as node, Client([node], wire=wire) as client:
        ids = await client.publish("q", PUBLISHED)
    assert ids == [0, 1, 2]
    content_type, messages = ON_THE_WIRE[wire]
    assert received[0][0] == content_type
    assert received[0][1]["messages"] == messages


async def test_msgpack_deliveries_are_asked_for_and_carry_raw_bodies() -> None:
    async def deliveries(request: web.Request) -> web.Response:
        assert request.headers["Accept"] == "application/msgpack"
        rows = [
            {"id": 7, "body": b"\x00\xff", "encoding": "base64", "headers": {}, "delivery_count": 0},
            {"id": 8, "body": "héllo".encode(), "encoding": "utf8", "headers": {"h": 1}, "seq": 3},
        ]
        return web.Response(body=msgpack.packb(rows), content_type="application/msgpack")

    app = web.Application()
    app.router.add_post("/api/queues/{q}/consumers/{tag}/deliveries", deliveries)
    async with serve(app) as node, Client([node]) as client:
        first, second = await client.deliveries("q", "c1", wait=0.1)
    assert (first.id, first.body, second.id, second.text) == (7, b"\x00\xff", 8, "héllo")
    assert (second.headers, second.seq) == ({"h": 1}, 3)


async def test_a_json_client_asks_for_no_msgpack() -> None:
    async def deliveries(request: web.Request) -> web.Response:
        assert "msgpack" not in request.headers.get("Accept", "")
        return web.json_response([{"id": 1, "body": "AP8=", "encoding": "base64"}])

    app = web.Application()
    app.router.add_post("/api/queues/{q}/consumers/{tag}/deliveries", deliveries)
    async with serve(app) as node, Client([node], wire="json") as client:
        [only] = await client.deliveries("q", "c1", wait=0.1)
    assert only.body == b"\x00\xff"


async def test_deliveries_decode_base64_and_utf8_bodies_to_bytes() -> None:
    async def deliveries(request: web.Request) -> web.Response:
        assert request.query["max"] == "5"
        return web.json_response(
            [
                {"id": 7, "body": "AP8=", "encoding": "base64", "headers": {}, "delivery_count": 0},
                {
                    "id": 8,
                    "body": "héllo",
                    "encoding": "utf8",
                    "headers": {"x-delivery-count": 2},
                    "delivery_count": 2,
                    "redelivered": True,
                    "published_at": 1700000000000,
                },
            ]
        )

    app = web.Application()
    app.router.add_post("/api/queues/{q}/consumers/{tag}/deliveries", deliveries)
    async with serve(app) as node, Client([node]) as client:
        first, second = await client.deliveries("q", "c1", max=5, wait=0.1)
    assert (first.id, first.body, first.redelivered) == (7, b"\x00\xff", False)
    assert (second.id, second.body, second.text) == (8, "héllo".encode(), "héllo")
    assert (second.delivery_count, second.redelivered, second.headers) == (2, True, {"x-delivery-count": 2})
    assert (first.published_at, second.published_at) == (None, 1700000000000)


@given(st.binary() | st.text())
def test_any_body_survives_encoding_and_decoding(body: bytes | str) -> None:
    expected = body if isinstance(body, bytes) else body.encode()
    wire = encode_message(body)
    assert decode_body(wire["body"], wire["encoding"]) == expected
    packed = msgpack.unpackb(msgpack.packb(encode_message(body, packed=True)))
    assert decode_delivery({"id": 1, **packed}, Delivery).body == expected


def test_a_message_id_goes_on_the_wire_only_when_given() -> None:
    assert encode_message(Message("pay", message_id="order-17"), packed=True) == {
        "body": "pay",
        "message_id": "order-17",
    }
    assert "message_id" not in encode_message(Message("pay"), packed=True)


def test_a_group_goes_on_the_wire_only_when_given_and_comes_back_in_its_header() -> None:
    assert encode_message(Message("ship", group="order-17"), packed=True) == {
        "body": "ship",
        "group": "order-17",
    }
    assert "group" not in encode_message(Message("ship"), packed=True)
    delivery = decode_delivery({"id": 1, "body": "ship", "headers": {"x-group-id": "order-17"}}, Delivery)
    assert delivery.group == "order-17"
    assert decode_delivery({"id": 2, "body": "ship"}, Delivery).group is None


def test_an_unknown_wire_format_is_refused() -> None:
    with pytest.raises(ValueError, match="wire"):
        Client(["127.0.0.1:1"], wire="xml")  # type: ignore[arg-type]


@pytest.mark.parametrize("wire", ["json", "msgpack"])
async def test_peek_answers_one_delivery_none_past_the_end_and_raises_for_an_unknown_queue(
    wire: Wire,
) -> None:
    async def peek(request: web.Request) -> web.Response:
        if request.match_info["q"] != "q":
            return web.json_response({"error": "not_found", "reason": "no queue"}, status=404)
        if request.query["position"] != "1":
            return web.json_response({"error": "no_message", "reason": "fewer ready"}, status=404)
        row = {
            "id": 4,
            "body": b"\x00\xff",
            "encoding": "base64",
            "headers": {},
            "delivery_count": 2,
            "redelivered": True,
        }
        if request.headers.get("Accept") == "application/msgpack":
            return web.Response(body=msgpack.packb(row), content_type="application/msgpack")
        return web.json_response({**row, "body": "AP8="})

    app = web.Application()
    app.router.add_get("/api/queues/{q}/messages/peek", peek)
    async with serve(app) as node, Client([node], wire=wire) as client:
        found = await client.peek("q", 1)
        assert await client.peek("q", 2) is None
        with pytest.raises(NotFoundError):
            await client.peek("other", 1)
    assert found == Delivery(4, b"\x00\xff", {}, 2, True)
