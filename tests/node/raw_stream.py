"""The streaming connection spoken frame by frame, for tests of the node's side of it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import msgpack

from cli.node_processes import HARNESS_HEADERS

ANSWER_TIMEOUT_S = 20.0


class RawStream:
    """One WebSocket to a node's /api/stream: send frames, read them back."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def send(self, **frame: Any) -> None:
        await self.ws.send_bytes(msgpack.packb(frame))

    async def next(self, timeout: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        """The next frame from the node (a closed connection fails the test)."""
        message = await self.ws.receive(timeout)
        assert message.type is aiohttp.WSMsgType.BINARY, message
        frame = msgpack.unpackb(message.data, raw=False)
        assert isinstance(frame, dict)
        return frame

    async def collect(
        self, done: Callable[[list[dict[str, Any]]], bool], timeout: float = ANSWER_TIMEOUT_S
    ) -> list[dict[str, Any]]:
        """Frames read until `done(frames so far)`."""
        frames: list[dict[str, Any]] = []
        while not done(frames):
            frames.append(await self.next(timeout))
        return frames

    async def call(self, **frame: Any) -> dict[str, Any]:
        """Send an operation and read the frame answering it (frames for other ids fail the test)."""
        await self.send(**frame)
        answer = await self.next()
        assert answer.get("id") == frame.get("id"), answer
        return answer


@contextlib.asynccontextmanager
async def raw_stream(
    url: str, headers: dict[str, str] | None = None, *, hello: bool = True
) -> AsyncIterator[RawStream]:
    """A stream to the node at `url`, logged in as the harness administrator unless `headers` say
    otherwise, past the hello unless `hello` is False."""
    async with (
        aiohttp.ClientSession(headers=HARNESS_HEADERS if headers is None else headers) as session,
        session.ws_connect(url + "/api/stream", max_msg_size=0) as ws,
    ):
        stream = RawStream(ws)
        if hello:
            answer = await stream.call(op="hello", versions=[1])
            assert (answer["op"], answer["version"]) == ("hello", 1), answer
        yield stream


def publish(frame_id: int, queue: str, *bodies: bytes, **fields: Any) -> dict[str, Any]:
    """A publish frame of `bodies` (as bin)."""
    return {
        "op": "publish",
        "id": frame_id,
        "queue": queue,
        "messages": [{"body": b} for b in bodies],
        **fields,
    }
