"""Node-to-node HTTP calls a node makes on its own behalf (e.g. dead-lettering to another leader)."""

from __future__ import annotations

import base64

import aiohttp

from cluster.bodies import StoredMessage
from cluster.peer_auth import NodeCaller

REMOTE_TIMEOUT_S = 10.0


async def publish_remote(
    http_url: str,
    queue: str,
    messages: list[tuple[StoredMessage, int | None]],
    *,
    caller: NodeCaller,
    publisher: str | None = None,
    seq: int | None = None,
) -> None:
    """Publish through any node's HTTP API (it forwards to the queue's leader); raises unless confirmed."""
    payload: dict = {
        "messages": [
            {
                "body": base64.b64encode(m.body).decode(),
                "encoding": "base64",
                "headers": m.headers,
                **({"expiration": expiration} if expiration is not None else {}),
            }
            for m, expiration in messages
        ]
    }
    if publisher is not None:
        payload.update(publisher=publisher, seq=seq)
    timeout = aiohttp.ClientTimeout(total=REMOTE_TIMEOUT_S)
    url = f"{http_url}/api/queues/{queue}/messages"
    body, headers = await caller.json_call("POST", url, payload)
    ssl_context = caller.ssl or True
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, data=body, headers=headers, ssl=ssl_context) as response,
    ):
        response.raise_for_status()
