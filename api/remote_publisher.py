"""Publishing through another node's public HTTP API on this node's own behalf (dead letters to a queue
led elsewhere): the `RemotePublisher` the server gives its node. The publish is asserted as this node
(`NodeCaller`) and sent as msgpack, each body as it is stored with the encoding it was published with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiohttp
import msgpack

from api.validation import MSGPACK
from cluster.replication.stored_message import StoredMessage
from cluster.security.peer_auth import NodeCaller

REMOTE_TIMEOUT_S = 10.0


def _message(message: StoredMessage, expiration: int | None, priority: int) -> dict[str, Any]:
    """One message of a msgpack publish body: a text body as text, any other as bin (base64 encoding)."""
    body: str | bytes = str(message.body, "utf-8") if message.encoding == "utf8" else bytes(message.body)
    wire: dict[str, Any] = {"body": body, "encoding": message.encoding, "headers": message.headers}
    if expiration is not None:
        wire["expiration"] = expiration
    if priority:
        wire["priority"] = priority
    return wire


class HttpRemotePublisher:
    """Publishes with `POST /api/queues/{queue}/messages` to the node at the URL given (which passes the
    publish on to the queue's leader)."""

    def __init__(self, caller: NodeCaller) -> None:
        self.caller = caller

    async def publish(
        self,
        via: str,
        queue: str,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        """Publish to `queue` through the node at `via` (each message at its priority with
        `priorities`); raises unless the publish was confirmed (2xx)."""
        levels = priorities or [0] * len(messages)
        payload: dict[str, Any] = {
            "messages": [
                _message(m, expiration, level)
                for (m, expiration), level in zip(messages, levels, strict=True)
            ]
        }
        if publisher is not None:
            payload.update(publisher=publisher, seq=seq)
        body: bytes = msgpack.packb(payload)
        url = f"{via}/api/queues/{queue}/messages"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REMOTE_TIMEOUT_S)) as session:
            to = await self.caller.name_at(session, via)  # the assertion holds on that node only
            headers = {"Content-Type": MSGPACK, **await self.caller.headers("POST", url, body, to=to)}
            async with session.post(url, data=body, headers=headers, ssl=self.caller.ssl or True) as response:
                response.raise_for_status()
