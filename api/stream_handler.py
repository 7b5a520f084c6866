"""GET /api/stream: the streaming connection (docs/stream-protocol.md), served by `StreamConnection`."""

from __future__ import annotations

from aiohttp import web

from api.app_keys import CONFIG
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
    try:
        async for message in ws:
            await connection.receive(message)
    finally:
        await connection.close()
    return ws
