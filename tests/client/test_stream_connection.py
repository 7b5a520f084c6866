"""A StreamConnection's own edges against a WebSocket server on real TCP (the protocol itself is tested
against real nodes in tests/node)."""

import asyncio
import math
from collections.abc import Callable
from typing import Any

import aiohttp
import msgpack
import pytest
from aiohttp import web
from client_fakes import serve

from quorumq.attempt_failures import NoAnswer
from quorumq.node_watch import NodeWatch
from quorumq.stream import VERSION, StreamConnection


def _stream_node(frames: list[dict[str, Any]]) -> web.Application:
    """A node that says hello, then keeps every frame it is sent and answers none."""

    async def stream(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.receive()
        await ws.send_bytes(msgpack.packb({"op": "hello", "version": VERSION}))
        async for message in ws:
            frames.append(msgpack.unpackb(message.data))
        return ws

    app = web.Application()
    app.router.add_get("/api/stream", stream)
    return app


async def _never_checked() -> bool:
    return True


async def _opened(base: str, session: aiohttp.ClientSession) -> StreamConnection:
    watch = NodeWatch(base, math.inf, _never_checked)
    return await StreamConnection.open(session, base, headers={}, tls=False, timeout=5.0, watch=watch)


async def _call_when(condition: Callable[[], bool], connection: StreamConnection) -> None:
    while not condition():
        await asyncio.sleep(0)
    await connection.call({"op": "publish"}, timeout=5.0)


async def test_rule_an_operation_sent_while_the_stream_closes_fails_with_no_answer() -> None:
    frames: list[dict[str, Any]] = []
    async with serve(_stream_node(frames)) as base, aiohttp.ClientSession() as session:
        connection = await _opened(base, session)
        writer = connection._writer
        closing = asyncio.ensure_future(connection.close())
        # the writer is cancelled and the socket closing, but neither has finished: not yet `closed`
        with pytest.raises(NoAnswer):
            await _call_when(lambda: writer.cancelling() > 0, connection)
        await closing
