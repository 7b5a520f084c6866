"""Tiny in-test HTTP nodes for the client tests: serve an aiohttp app, or name a port that refuses."""

import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import msgpack
from aiohttp import web
from aiohttp.test_utils import TestServer


@contextlib.asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 (a free port) and yield its base URL."""
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


def refused_node() -> str:
    """The base URL of a local port nothing listens on (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def error(status: int, code: str, reason: str, **hint: str) -> web.Response:
    """A JSON error answer in the API's `{"error", "reason"}` shape."""
    return web.json_response({"error": code, "reason": reason, **hint}, status=status)


async def published(request: web.Request) -> Any:
    """A publish request's body, msgpack (the client's default) or JSON."""
    if request.content_type == "application/msgpack":
        return msgpack.unpackb(await request.read())
    return await request.json()
