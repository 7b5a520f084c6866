"""Message bodies cross the wire intact: bytes as base64, str as utf8, in both directions."""

from typing import Any

from aiohttp import web
from client_fakes import serve
from hypothesis import given
from hypothesis import strategies as st

from api.client import Message, QuorumqClient
from api.client_messages import decode_body, encode_message


async def test_publish_sends_bytes_as_base64_and_text_as_utf8() -> None:
    received: list[dict[str, Any]] = []

    async def publish(request: web.Request) -> web.Response:
        body = await request.json()
        received.append(body)
        return web.json_response({"ids": list(range(len(body["messages"])))}, status=201)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    async with serve(app) as node, QuorumqClient([node]) as client:
        ids = await client.publish(
            "q", [b"\x00\xff", "héllo", Message("t", headers={"k": 1}, expiration=500)]
        )
    assert ids == [0, 1, 2]
    assert received[0]["messages"] == [
        {"body": "AP8=", "encoding": "base64"},
        {"body": "héllo", "encoding": "utf8"},
        {"body": "t", "encoding": "utf8", "headers": {"k": 1}, "expiration": 500},
    ]


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
    app.router.add_get("/api/queues/{q}/consumers/{tag}/deliveries", deliveries)
    async with serve(app) as node, QuorumqClient([node]) as client:
        first, second = await client.deliveries("q", "c1", max=5, wait=0.1)
    assert (first.id, first.body, first.redelivered) == (7, b"\x00\xff", False)
    assert (second.id, second.body, second.text) == (8, "héllo".encode(), "héllo")
    assert (second.delivery_count, second.redelivered, second.headers) == (2, True, {"x-delivery-count": 2})
    assert (first.published_at, second.published_at) == (None, 1700000000000)


@given(st.binary() | st.text())
def test_any_body_survives_encoding_and_decoding(body: bytes | str) -> None:
    wire = encode_message(body)
    expected = body if isinstance(body, bytes) else body.encode()
    assert decode_body(wire["body"], wire["encoding"]) == expected
