"""GET /api/stream: the streaming connection (docs/use/stream-protocol.md), served by `StreamConnection`."""

from __future__ import annotations

from aiohttp import WSCloseCode, web

from api.access import Access
from api.app_keys import CONFIG, STREAMS
from api.auth import principal
from api.endpoints import route
from api.errors import ApiError
from api.stream_connection import StreamConnection
from api.stream_frames import OVERSIZE_FACTOR

HEARTBEAT_S = 15.0


@route(
    "GET",
    "/api/stream",
    access=Access.AUTHENTICATED,  # each operation then checks its own permission
    summary="the streaming connection: a WebSocket carrying msgpack frames (docs/use/stream-protocol.md)",
    responses={"101": "switching to the WebSocket protocol"},
    about=(
        "the streaming connection: a WebSocket of msgpack frames carrying pipelined publishes "
        "(each confirmed after majority commit, as the 201 is) and pushed deliveries with "
        "prefetch credit, acks and nacks "
        "(docs/use/stream-protocol.md)"
    ),
)
async def stream(request: web.Request) -> web.StreamResponse:
    """Upgrade to a WebSocket and serve its frames until it closes; then its consumers are cancelled."""
    ws = web.WebSocketResponse(
        heartbeat=HEARTBEAT_S,
        compress=False,
        max_msg_size=request.app[CONFIG].max_request_bytes * OVERSIZE_FACTOR,
    )
    if not ws.can_prepare(request).ok:
        raise ApiError(400, "bad_request", "GET /api/stream takes a WebSocket upgrade")
    await ws.prepare(request)
    connection = StreamConnection(request.app, ws, principal(request))
    request.app[STREAMS].add(ws)
    try:
        async for message in ws:
            await connection.receive(message)
    finally:
        request.app[STREAMS].discard(ws)
        await connection.close()
    return ws


async def close_streams(app: web.Application) -> None:
    """On shutdown, close every open stream (1001, going away) rather than wait for its client to: the
    HTTP server waits for its handlers, and a stream's lasts as long as its client holds it. Clients go on
    with another node, as after any dropped stream."""
    streams = app[STREAMS]
    for ws in list(streams):
        await ws.close(code=WSCloseCode.GOING_AWAY, message=b"node shutting down")
