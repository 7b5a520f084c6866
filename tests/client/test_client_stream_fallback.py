"""A client that uses streams by default falls back to the request/response API with a node that does
not offer GET /api/stream (an earlier version: 404), asks such a node only once, and with
`stream=False` never asks. (The stream itself is tested against real nodes in tests/node.)"""

from collections import Counter
from typing import Any

import pytest
from aiohttp import web
from client_fakes import published, serve

from quorumq import Client


def _node_without_streams(seen: Counter[str]) -> web.Application:
    """A node of an earlier version: it publishes and polls over HTTP and knows no /api/stream."""

    async def publish(request: web.Request) -> web.Response:
        seen["publish"] += 1
        body: Any = await published(request)
        return web.json_response({"ids": list(range(len(body["messages"])))}, status=201)

    async def consume(request: web.Request) -> web.Response:
        seen["consume"] += 1
        return web.json_response({"consumer": "t1"}, status=201)

    async def deliveries(request: web.Request) -> web.Response:
        seen["poll"] += 1
        return web.json_response([{"id": 7, "body": "polled", "encoding": "utf8", "headers": {}}])

    @web.middleware
    async def count_every_request(request: web.Request, handler: Any) -> web.StreamResponse:
        seen[request.path] += 1
        return await handler(request)

    app = web.Application(middlewares=[count_every_request])
    app.router.add_post("/api/queues/{q}/messages", publish)
    app.router.add_post("/api/queues/{q}/consumers", consume)
    app.router.add_post("/api/queues/{q}/consumers/{tag}/deliveries", deliveries)
    return app


@pytest.mark.parametrize("stream", [None, False])
async def test_a_node_without_streams_is_served_over_http_and_asked_for_a_stream_at_most_once(
    stream: bool | None,
) -> None:
    seen: Counter[str] = Counter()
    async with serve(_node_without_streams(seen)) as node, Client([node], stream=stream) as client:
        assert await client.publish("q", ["a", "b"]) == [0, 1]
        assert await client.publish("q", "c") == [0]
        async with client.subscribe("q") as subscription:
            async for message in subscription:
                assert message.body == b"polled"
                break
    assert (seen["publish"], seen["consume"], seen["poll"]) == (2, 1, 1)
    assert seen["/api/stream"] == (1 if stream is None else 0)
