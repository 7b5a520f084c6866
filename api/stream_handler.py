"""GET /api/stream: the streaming connection (docs/use/stream-protocol.md), served by `StreamConnection`."""

from __future__ import annotations

from aiohttp import WSCloseCode, web

from api.app_keys import CONFIG, STREAMS
from api.auth import principal
from api.errors import ApiError
from api.stream_connection import StreamConnection
from api.stream_frames import OVERSIZE_FACTOR

HEARTBEAT_S = 15.0


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
