"""Consuming: subscribe long-polls and yields deliveries, settles them, and cancels its consumer."""

import contextlib
from typing import Any

from aiohttp import web
from client_fakes import serve

from quorumq import Client


def consumer_app(batches: list[list[dict[str, Any]]], calls: list[tuple[str, Any]]) -> web.Application:
    """One queue whose consumer 'c1' hands out `batches` in turn (then nothing); records every call."""

    async def consume(request: web.Request) -> web.Response:
        calls.append(("consume", await request.json()))
        return web.json_response({"consumer": "c1"}, status=201)

    async def deliveries(request: web.Request) -> web.Response:
        calls.append(("poll", dict(request.query)))
        return web.json_response(batches.pop(0) if batches else [])

    async def ack(request: web.Request) -> web.Response:
        calls.append(("ack", await request.json()))
        return web.Response(status=204)

    async def cancel(request: web.Request) -> web.Response:
        calls.append(("cancel", request.match_info["tag"]))
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/consumers", consume)
    app.router.add_post("/api/queues/{q}/consumers/{tag}/deliveries", deliveries)
    app.router.add_post("/api/queues/{q}/consumers/{tag}/ack", ack)
    app.router.add_delete("/api/queues/{q}/consumers/{tag}", cancel)
    return app


def delivery(message_id: int) -> dict[str, Any]:
    return {"id": message_id, "body": f"m{message_id}", "encoding": "utf8", "delivery_count": 0}


async def test_subscribe_yields_deliveries_across_polls_and_cancels_on_exit() -> None:
    calls: list[tuple[str, Any]] = []
    app = consumer_app([[delivery(1), delivery(2)], [], [delivery(3)]], calls)
    bodies = []
    async with (
        serve(app) as node,
        Client([node]) as client,
        client.subscribe("q", prefetch=10, wait=0.2) as sub,
        contextlib.aclosing(aiter(sub)) as stream,
    ):
        async for message in stream:
            bodies.append(message.body)
            await sub.ack([message])
            if len(bodies) == 3:
                break
    assert bodies == [b"m1", b"m2", b"m3"]
    assert calls[0] == ("consume", {"prefetch": 10, "priority": 0})
    assert [call for call in calls if call[0] == "ack"] == [("ack", {"ids": [i]}) for i in (1, 2, 3)]
    assert ("poll", {"max": "10", "wait": "0.2"}) in calls
    assert calls[-1] == ("cancel", "c1")


async def test_durable_consumer_is_registered_by_name() -> None:
    calls: list[tuple[str, Any]] = []
    async with serve(consumer_app([], calls)) as node, Client([node]) as client:
        assert await client.consume("q", prefetch=5, durable=True, name="spark-1") == "c1"
    assert calls == [("consume", {"prefetch": 5, "priority": 0, "durable": True, "name": "spark-1"})]


async def test_a_node_older_than_the_post_poll_is_polled_with_get() -> None:
    calls: list[tuple[str, Any]] = []

    async def deliveries(request: web.Request) -> web.Response:
        calls.append((request.method, dict(request.query)))
        return web.json_response([delivery(len(calls))])

    older = web.Application()
    older.router.add_get("/api/queues/{q}/consumers/{tag}/deliveries", deliveries)  # no POST: answers 405
    async with serve(older) as node, Client([node], stream=False) as client:
        first = await client.deliveries("q", "c1", max=5, wait=0.1)
        second = await client.deliveries("q", "c1", max=5, wait=0.1)
    assert [m.body for m in first + second] == [b"m1", b"m2"]
    assert [method for method, _ in calls] == ["GET", "GET"]  # the 405 taught it once
