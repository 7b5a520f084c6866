"""W6: revocation reaches live streams. A stream consumer stops receiving, and its stream is closed with
a close code saying why, once its user loses read permission on the queue (4403), is deleted or changes
password (4401), or the token the stream was opened with expires (4401); what it held goes back to the
queue. An HTTP consumer is refused at its next request and ended by its queue's leader. Real nodes, real
WebSockets, real users."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
from security_helpers import ADMIN, NO_GUEST, add_user, call, eventually_status
from support.eventually import eventually

from cli.node_processes import ProcessCluster
from quorumq.auth import basic_header

FRAME_TIMEOUT_S = 20.0
CREDENTIALS_GONE = 4401
PERMISSION_REVOKED = 4403


async def _queue_with_leader(cluster: ProcessCluster, queue: str) -> str:
    """Declare `queue` (as the administrator); the URL of the node leading it."""
    base = cluster.urls[0]
    declared = await call("PUT", f"{base}/api/queues/{queue}", authorization=ADMIN, json={})
    assert declared.status in (201, 204), declared.body
    shown = await call("GET", f"{base}/api/queues/{queue}", authorization=ADMIN)
    assert shown.status == 200 and shown.body["leader"], shown.body
    return cluster.node(shown.body["leader"]).url


async def _publish(cluster: ProcessCluster, queue: str, body: str) -> None:
    published = await call(
        "POST",
        f"{cluster.urls[0]}/api/queues/{queue}/messages",
        authorization=ADMIN,
        json={"messages": [{"body": body}]},
    )
    assert published.status == 201, published.body


async def _ready(cluster: ProcessCluster, queue: str) -> int:
    shown = await call("GET", f"{cluster.urls[0]}/api/queues/{queue}", authorization=ADMIN)
    return int(shown.body["messages_ready"])


class Stream:
    """A WebSocket to /api/stream, past its hello."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def call(self, **frame: Any) -> dict[str, Any]:
        await self.ws.send_bytes(msgpack.packb(frame))
        answer = await self.next()
        assert isinstance(answer, dict) and answer.get("id") == frame.get("id"), answer
        return answer

    async def next(self) -> dict[str, Any] | int:
        """The next frame, or the close code once the node closed the stream."""
        message = await self.ws.receive(FRAME_TIMEOUT_S)
        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
            return int(self.ws.close_code if message.data is None else message.data)
        assert message.type is aiohttp.WSMsgType.BINARY, message
        frame = msgpack.unpackb(message.data, raw=False)
        assert isinstance(frame, dict)
        return frame

    async def consume(self, queue: str) -> str:
        answer = await self.call(op="consume", id=1, queue=queue, prefetch=10)
        assert answer["op"] == "consume-ok", answer
        return str(answer["tag"])

    async def delivered(self) -> list[str]:
        frame = await self.next()
        assert isinstance(frame, dict) and frame["op"] == "deliver", frame
        return [message["body"].decode() for message in frame["messages"]]


@contextlib.asynccontextmanager
async def _stream(url: str, authorization: str) -> AsyncIterator[Stream]:
    async with (
        aiohttp.ClientSession(headers={"Authorization": authorization}) as session,
        session.ws_connect(url + "/api/stream", max_msg_size=0) as ws,
    ):
        stream = Stream(ws)
        hello = await stream.call(op="hello", versions=[1])
        assert hello["op"] == "hello", hello
        yield stream


async def _consuming_user(cluster: ProcessCluster, user: str, queue: str) -> tuple[str, str]:
    """The credentials of a new user who may read `queue`, and the URL of the queue's leader."""
    await add_user(cluster.urls, user, f"{user}-pw", {"read": f"^{queue}$"})
    return basic_header(user, f"{user}-pw"), await _queue_with_leader(cluster, queue)


async def _token(url: str, credentials: str, ttl_s: int) -> str:
    """The Authorization header of a bearer token `credentials` mint at `url`, lasting `ttl_s`."""
    minted = await call("POST", f"{url}/api/tokens", authorization=credentials, json={"ttl_s": ttl_s})
    assert minted.status == 201, minted.body
    return f"Bearer {minted.body['token']}"


async def _changed_on_every_node(
    cluster: ProcessCluster, path: str, change: dict[str, str], probe: str, credentials: str, status: int
) -> None:
    """An administrator PUTs `change` to `path`; then every node answers `probe` with `status` to
    `credentials`."""
    changed = await call("PUT", cluster.urls[0] + path, authorization=ADMIN, json=change)
    assert changed.status == 204, changed.body
    for url in cluster.urls:
        await eventually_status(url + probe, credentials, status)


async def _after_revocation(cluster: ProcessCluster, stream: Stream, queue: str) -> dict[str, Any] | int:
    """Publish a message (the revocation is applied on every node by now); what the stream gets next: a
    close code, never that delivery."""
    await _publish(cluster, queue, "after")
    return await stream.next()


async def test_w6_a_revoked_read_permission_closes_the_stream_and_returns_what_it_held(
    secured: ProcessCluster,
) -> None:
    queue = "w6-revoked"
    reader, leader = await _consuming_user(secured, "w6-reader", queue)
    async with _stream(leader, reader) as stream:
        await stream.consume(queue)
        await _publish(secured, queue, "before")
        assert await stream.delivered() == ["before"]
        await _changed_on_every_node(
            secured,
            "/api/users/w6-reader/permissions",
            {"read": "^nothing$"},
            f"/api/queues/{queue}",
            reader,
            403,
        )
        assert await _after_revocation(secured, stream, queue) == PERMISSION_REVOKED
    assert await _ready(secured, queue) == 2  # "before", unacked, went back


async def test_w6_a_deleted_user_s_stream_is_closed(secured: ProcessCluster) -> None:
    queue = "w6-deleted"
    reader, leader = await _consuming_user(secured, "w6-deleted", queue)
    async with _stream(leader, reader) as stream:
        await stream.consume(queue)
        deleted = await call("DELETE", f"{secured.urls[0]}/api/users/w6-deleted", authorization=ADMIN)
        assert deleted.status == 204, deleted.body
        for url in secured.urls:
            await eventually_status(f"{url}/api/whoami", reader, 401)
        assert await _after_revocation(secured, stream, queue) == CREDENTIALS_GONE
    assert await _ready(secured, queue) == 1


async def test_w6_a_stream_opened_with_a_token_is_closed_when_the_token_expires(
    secured: ProcessCluster,
) -> None:
    queue = "w6-expiring"
    reader, leader = await _consuming_user(secured, "w6-expiring", queue)
    bearer = await _token(leader, reader, ttl_s=2)
    async with _stream(leader, bearer) as stream:
        await stream.consume(queue)
        await eventually_status(f"{leader}/api/whoami", bearer, 401)  # the token has expired
        assert await _after_revocation(secured, stream, queue) == CREDENTIALS_GONE


async def test_w6_a_password_change_closes_a_stream_opened_with_the_old_credentials(
    secured: ProcessCluster,
) -> None:
    queue = "w6-password"
    reader, leader = await _consuming_user(secured, "w6-password", queue)
    bearer = await _token(leader, reader, ttl_s=600)
    async with _stream(leader, bearer) as stream:
        await stream.consume(queue)
        await _changed_on_every_node(
            secured, "/api/users/w6-password", {"password": "new-pw-1"}, "/api/whoami", bearer, 401
        )
        assert await _after_revocation(secured, stream, queue) == CREDENTIALS_GONE


def test_w6_an_http_consumer_is_refused_and_ended_once_its_permission_is_revoked(
    tmp_path: Path,
) -> None:
    """Its next request is refused (the middleware checks every request), and it ends at once: what it
    held goes back long before its idle timeout (10 minutes here) would return it."""
    env = {**NO_GUEST, "QUORUMQ_CONSUMER_IDLE_TIMEOUT_MS": str(600_000)}
    cluster = ProcessCluster.start(tmp_path, 1, env=env)
    try:
        asyncio.run(_http_consumer_revoked(cluster))
    finally:
        cluster.stop()


async def _http_consumer_revoked(cluster: ProcessCluster) -> None:
    queue = "w6-http"
    reader, leader = await _consuming_user(cluster, "w6-http", queue)
    await _publish(cluster, queue, "held")
    registered = await call("POST", f"{leader}/api/queues/{queue}/consumers", authorization=reader, json={})
    assert registered.status == 201, registered.body
    polled = f"{leader}/api/queues/{queue}/consumers/{registered.body['consumer']}/deliveries?wait=5"
    assert len((await call("GET", polled, authorization=reader)).body) == 1
    assert await _ready(cluster, queue) == 0
    revoked = await call(
        "PUT", f"{leader}/api/users/w6-http/permissions", authorization=ADMIN, json={"read": "^x$"}
    )
    assert revoked.status == 204, revoked.body
    await eventually_status(polled, reader, 403)

    async def one_ready() -> bool:
        ready = await _ready(cluster, queue)
        assert ready == 1, f"{ready} ready"
        return True

    await eventually(one_ready, f"one message ready in {queue}", timeout=10, interval=0.05)
