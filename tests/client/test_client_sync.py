"""SyncClient: the same calls as blocking functions, usable from plain (non-async) code."""

import asyncio

import pytest
from aiohttp import web
from client_fakes import error, published, refused_node, serve

from quorumq import NoNodeAvailableError, NotFoundError, SyncClient


def publish_and_count(nodes: list[str]) -> tuple[list[int], dict, str]:
    """Plain blocking code, as the CLI or a Spark executor would write it."""
    with SyncClient(nodes) as client:
        ids = client.publish("orders", ["a", b"b"])
        stats = client.queue("orders")
        with pytest.raises(NotFoundError):
            client.queue("missing")
        return ids, stats, client.publisher_id


async def test_sync_client_works_from_plain_code() -> None:
    publishers: list[str] = []

    async def publish(request: web.Request) -> web.Response:
        publishers.append((await published(request))["publisher"])
        return web.json_response({"ids": [10, 11]}, status=201)

    async def stats(request: web.Request) -> web.Response:
        if request.match_info["q"] != "orders":
            return error(404, "not_found", "no queue 'missing'")
        return web.json_response({"name": "orders", "messages": 2})

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    app.router.add_get("/api/queues/{q}", stats)
    async with serve(app) as node:
        ids, queue_stats, publisher_id = await asyncio.to_thread(publish_and_count, [refused_node(), node])
    assert ids == [10, 11]
    assert queue_stats == {"name": "orders", "messages": 2}
    assert publishers == [publisher_id]


def test_sync_client_raises_no_node_available_and_closes_twice() -> None:
    client = SyncClient([refused_node()])
    with pytest.raises(NoNodeAvailableError):
        client.health()
    client.close()
    client.close()
    with pytest.raises(RuntimeError):
        client.health()
