"""StreamConnection: one streaming connection to one node (GET /api/stream, docs/use/stream-protocol.md).

Operations are pipelined: each is sent with a fresh request id and answered whenever the node is done
with it. An answer is handed back as the HTTP endpoint's would be, a status and its body (201 with the
publish answer for a confirm, the error's status and `{"error", "reason", ...}` body for an error frame),
so the request/response client's retry policy (quorumq.retry, quorumq.transport) applies unchanged.
A consumer's deliveries go to the `ConsumerSink` its `consume` registered.
"""

import asyncio
import collections
import itertools
import ssl
from collections.abc import Mapping
from typing import Any, Protocol

import aiohttp
import msgpack

from quorumq.attempt_failures import ConnectFailed, NoAnswer
from quorumq.node_watch import NodeWatch

VERSION = 1
HEARTBEAT_S = 15.0
CONNECTION_LOST = "connection_lost"
_ANSWER_STATUS = {"confirm": 201, "consume-ok": 201, "settled": 200, "touched": 200, "cancelled": 200}


class ConsumerSink(Protocol):
    """Where a consumer's deliveries go, and word that it stopped delivering on its connection."""

    def delivered(self, messages: list[dict[str, Any]]) -> None:
        """Messages delivered to the consumer (the msgpack deliveries answer's maps)."""
        ...

    def ended(self, reason: str, leader_http: str | None) -> None:
        """The consumer delivers no more on this connection: `reason` as the node gave it (`leader_moved`
        with the new leader's URL, `consumer_gone`, `consumer_timeout`, `consumer_idle`, `queue_deleted`,
        `cancelled`), or CONNECTION_LOST."""
        ...


class StreamUnavailable(Exception):
    """The node answered the upgrade with `status`, not a WebSocket (404: it offers no stream)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"the node answered the stream upgrade with {status}")
        self.status = status


class StreamConnection:
    """A streaming connection to the node at `base`, past the hello."""

    def __init__(self, base: str, ws: aiohttp.ClientWebSocketResponse, watch: NodeWatch) -> None:
        self.base = base
        self._ws = ws
        self._watch = watch
        self._ids = itertools.count()
        self._packer = msgpack.Packer()
        self._pending: dict[int, tuple[asyncio.Future[tuple[int, Any]], ConsumerSink | None]] = {}
        self._sinks: dict[str, ConsumerSink] = {}
        # Frames go out through one writer, so a caller waits only for its answer (which the watch can
        # end) and never in a send held up by a node that stopped reading.
        self._outbox: collections.deque[bytes] = collections.deque()
        self._idle: asyncio.Future[None] | None = None
        self._reader = asyncio.create_task(self._read())
        self._writer = asyncio.create_task(self._write())

    @classmethod
    async def open(
        cls,
        session: aiohttp.ClientSession,
        base: str,
        *,
        headers: Mapping[str, str],
        tls: ssl.SSLContext | bool,
        timeout: float,
        watch: NodeWatch,
        vhost: str = "/",
    ) -> "StreamConnection":
        """Connect and say hello within `timeout`, in `vhost` (the queues its operations name are of it);
        `watch` is the node's (quorumq.node_watch).
        StreamUnavailable when the node answers the upgrade otherwise than by switching to a WebSocket;
        ConnectFailed when it cannot be reached, or does not answer in time (no operation was sent
        either way)."""
        try:
            async with asyncio.timeout(timeout):
                ws = await session.ws_connect(
                    base + "/api/stream", headers=headers, ssl=tls, heartbeat=HEARTBEAT_S, max_msg_size=0
                )
                try:
                    hello_frame = {"op": "hello", "versions": [VERSION]}
                    if vhost != "/":
                        hello_frame["vhost"] = vhost
                    await ws.send_bytes(msgpack.packb(hello_frame))
                    hello = _frame(await ws.receive())
                except BaseException:
                    await ws.close()
                    raise
        except aiohttp.WSServerHandshakeError as exc:
            raise StreamUnavailable(exc.status) from exc
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError, TimeoutError) as exc:
            raise ConnectFailed(str(exc) or "no answer in time") from exc
        except aiohttp.ClientError as exc:
            raise ConnectFailed(str(exc) or type(exc).__name__) from exc
        if hello.get("op") != "hello" or hello.get("version") != VERSION:
            await ws.close()
            raise StreamUnavailable(0)
        return cls(base, ws, watch)

    @property
    def closed(self) -> bool:
        """True once the connection ended (its operations then failed with NoAnswer)."""
        return self._reader.done() or self._writer.done()

    async def call(
        self,
        frame: Mapping[str, Any],
        timeout: float,
        sink: ConsumerSink | None = None,
        *,
        watched: bool = False,
    ) -> tuple[int, Any]:
        """Send operation `frame` (its `op` and fields) and return the answer's status and body. A
        `consume` registers `sink` for its deliveries. NoAnswer when no answer came within `timeout`
        or the connection ended first, and when `watched`, also when the node stopped answering
        (quorumq.node_watch); the operation may have taken effect."""
        if self.closed:
            raise NoAnswer(CONNECTION_LOST, f"the stream to {self.base} is closed")
        request_id = next(self._ids)
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[int, Any]] = loop.create_future()
        self._pending[request_id] = (answer, sink)
        now = loop.time()
        self._watch.track(answer, now, now + timeout, watched)
        self._outbox.append(self._packer.pack({**frame, "id": request_id}))
        idle = self._idle
        if idle is not None:
            self._idle = None
            if not idle.done():  # cancelled with the writer by a close under way
                idle.set_result(None)
        try:
            return await answer
        finally:
            self._pending.pop(request_id, None)
            self._watch.untrack(answer)

    async def close(self) -> None:
        """Close the connection: the node cancels its consumers."""
        self._writer.cancel()
        await self._ws.close()
        await asyncio.gather(self._reader, self._writer, return_exceptions=True)

    async def _write(self) -> None:
        """Send the queued frames in order. When a send fails the connection is going: every operation
        waiting for an answer fails, and the socket is closed so the reader ends and the node drops the
        consumers it held."""
        outbox = self._outbox
        try:
            while True:
                while outbox:
                    await self._ws.send_bytes(outbox.popleft())
                self._idle = asyncio.get_running_loop().create_future()
                await self._idle
        except (aiohttp.ClientError, ConnectionError) as exc:
            self._fail_pending(NoAnswer(CONNECTION_LOST, str(exc) or type(exc).__name__))
            await self._ws.close()

    def _fail_pending(self, failure: NoAnswer) -> None:
        for answer, _ in self._pending.values():
            if not answer.done():
                answer.set_exception(failure)

    async def _read(self) -> None:
        time = asyncio.get_running_loop().time
        try:
            async for message in self._ws:
                self._watch.heard(time())
                frame = _frame(message)
                if frame:
                    self._dispatch(frame)
        finally:
            self._writer.cancel()
            self._fail_pending(
                NoAnswer(CONNECTION_LOST, f"the stream to {self.base} closed before the answer came")
            )
            sinks, self._sinks = self._sinks, {}
            for sink in sinks.values():
                sink.ended(CONNECTION_LOST, None)

    def _dispatch(self, frame: dict[str, Any]) -> None:
        """Hand a frame from the node to the operation or the consumer it is for."""
        op = frame.get("op")
        if op == "deliver":
            sink = self._sinks.get(frame.get("tag", ""))
            if sink is not None:
                sink.delivered(frame.get("messages") or [])
            return
        if op == "cancelled" and frame.get("id") is None:
            ended = self._sinks.pop(frame.get("tag", ""), None)
            if ended is not None:
                ended.ended(str(frame.get("reason")), frame.get("leader_http"))
            return
        waiting = self._pending.get(frame.get("id", -1))
        if waiting is None or waiting[0].done():
            return  # an answer nobody waits for any more (it timed out), or an error about no request
        answer, sink = waiting
        if op == "error":
            status = frame.get("status")
            answer.set_result((status if isinstance(status, int) else 500, frame))
            return
        if op == "consume-ok" and sink is not None:
            self._sinks[str(frame.get("tag"))] = sink
        elif op == "cancelled":
            self._sinks.pop(str(frame.get("tag")), None)
        body = {k: v for k, v in frame.items() if k not in ("op", "id")}
        if op == "consume-ok":
            body = {"consumer": frame.get("tag"), "stream": self.base, "hold_ms": frame.get("hold_ms")}
        answer.set_result((_ANSWER_STATUS.get(str(op), 200), body))


def _frame(message: aiohttp.WSMessage) -> dict[str, Any]:
    """The map a binary message holds ({} for anything else)."""
    if message.type is not aiohttp.WSMsgType.BINARY:
        return {}
    try:
        frame = msgpack.unpackb(message.data, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException):
        return {}
    return frame if isinstance(frame, dict) else {}
