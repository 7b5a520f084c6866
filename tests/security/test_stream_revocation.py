"""W6: revocation reaches live streams. A stream consumer stops receiving, and its stream is closed with
a close code saying why, once its user loses read permission on the queue (4403), is deleted or changes
password (4401), or the token the stream was opened with expires (4401); what it held goes back to the
queue. An HTTP consumer is refused at its next request and ended by its queue's leader; one whose token
expired ends at its idle timeout, and a durable consumer is kept for its owner. Real nodes, real
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


async def _listed(url: str, queue: str, tag: str) -> bool:
    """Whether the queue lists the consumer `tag` (a durable consumer by its full name; a plain one by the
    first characters of its tag, as listings show it)."""
    listed = await call("GET", f"{url}/api/queues/{queue}/consumers", authorization=ADMIN)
    assert listed.status == 200, listed.body
    return any(tag.startswith(consumer["tag"].removesuffix("...")) for consumer in listed.body)


async def test_w6_a_durable_consumer_is_kept_for_its_owner_while_it_may_not_read(
    secured: ProcessCluster,
) -> None:
    """Revoking read ends the owner's plain consumer (what it held returns) but keeps its durable one,
    with what that checked out, for when it may read again: then it reads the same deliveries and goes on
    from its position."""
    queue = "w6-durable"
    reader, leader = await _consuming_user(secured, "w6-durable", queue)
    published = await call(
        "POST", f"{leader}/api/queues/{queue}/messages", authorization=ADMIN,
        json={"messages": [{"body": "d0"}, {"body": "d1"}, {"body": "plain"}]},
    )  # fmt: skip
    assert published.status == 201, published.body
    durable = f"{leader}/api/queues/{queue}/consumers/w6-job"
    taken = await call("POST", durable + "/checkout", authorization=reader, json={"max": 2})
    assert taken.status == 200 and taken.body["end"] == 2, taken.body
    registered = await call("POST", f"{leader}/api/queues/{queue}/consumers", authorization=reader, json={})
    plain = registered.body["consumer"]
    polled = await call(
        "GET", f"{leader}/api/queues/{queue}/consumers/{plain}/deliveries?wait=5", authorization=reader
    )
    assert [m["body"] for m in polled.body] == ["plain"], polled.body
    assert await _ready(secured, queue) == 0
    probe = f"/api/queues/{queue}"
    permissions = "/api/users/w6-durable/permissions"
    await _changed_on_every_node(secured, permissions, {"read": "^nothing$"}, probe, reader, 403)

    async def plain_consumer_ended() -> bool:
        return await _ready(secured, queue) == 1 and not await _listed(leader, queue, plain)

    await eventually(plain_consumer_ended, "the plain consumer ended", timeout=10, interval=0.05)
    assert await _listed(leader, queue, "w6-job~w6-durable")
    assert await _ready(secured, queue) == 1  # the durable consumer's two are still checked out
    refused = await call("GET", durable + "/log?from=0&to=2", authorization=reader)
    assert refused.status == 403, refused.body
    await _changed_on_every_node(secured, permissions, {"read": f"^{queue}$"}, probe, reader, 200)
    log = await call("GET", durable + "/log?from=0&to=2", authorization=reader)
    assert log.status == 200 and [m["body"] for m in log.body] == ["d0", "d1"], log.body
    more = await call("POST", durable + "/checkout", authorization=reader, json={"max": 1})
    assert more.status == 200 and more.body["end"] == 3, more.body


IDLE_TIMEOUT_S = 20


def test_w6_an_http_consumer_whose_token_expired_ends_at_its_idle_timeout(tmp_path: Path) -> None:
    """An expired token is refused at the consumer's next request, but the consumer is not ended then (its
    owner may still read): it ends when it has gone unheard for its idle timeout, and what it held
    returns then."""
    env = {**NO_GUEST, "QUORUMQ_CONSUMER_IDLE_TIMEOUT_MS": str(IDLE_TIMEOUT_S * 1000)}
    cluster = ProcessCluster.start(tmp_path, 1, env=env)
    try:
        asyncio.run(_http_consumer_of_an_expired_token(cluster))
    finally:
        cluster.stop()


async def _http_consumer_of_an_expired_token(cluster: ProcessCluster) -> None:
    queue = "w6-http-token"
    reader, leader = await _consuming_user(cluster, "w6-http-token", queue)
    await _publish(cluster, queue, "held")
    bearer = await _token(leader, reader, ttl_s=2)
    registered = await call("POST", f"{leader}/api/queues/{queue}/consumers", authorization=bearer, json={})
    assert registered.status == 201, registered.body
    tag = registered.body["consumer"]
    polled = f"{leader}/api/queues/{queue}/consumers/{tag}/deliveries?wait=5"
    assert len((await call("GET", polled, authorization=bearer)).body) == 1
    loop = asyncio.get_running_loop()
    last_heard = loop.time()
    await eventually_status(f"{leader}/api/whoami", bearer, 401)  # the token has expired
    assert (await call("GET", polled, authorization=bearer)).status == 401  # refused, and not heard
    assert await _listed(leader, queue, tag) and await _ready(cluster, queue) == 0  # not ended

    async def ended() -> bool:
        return await _ready(cluster, queue) == 1 and not await _listed(leader, queue, tag)

    await eventually(
        ended, "the consumer to end at its idle timeout", timeout=IDLE_TIMEOUT_S + 40, interval=0.2
    )
    assert loop.time() - last_heard >= IDLE_TIMEOUT_S - 1  # not before it
