"""One streaming connection on the node (docs/use/stream-protocol.md): its frames dispatched to the same
doors as the HTTP endpoints, its operations pipelined, its consumers delivering.

Each operation runs in its own task and answers when it is done, so answers come in the order operations
finish; at most MAX_IN_FLIGHT run at once per connection (the reader waits, and TCP pushes back). Every
operation checks the caller's current permission on its queue, as its HTTP endpoint's access rule does,
and a revocation reaches the consumers at once (`_recheck`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from aiohttp import WSMessage, WSMsgType, web

from api import stream_frames as frames
from api.access import Access, Principal
from api.app_keys import ALARMS, CONFIG, METADATA, METRICS, QUEUES, STATUS, WALL_MS
from api.auth import Unauthenticated, require
from api.consumer_options import ConsumerOptions
from api.consumer_owners import own_consumer
from api.error_answers import error_answer
from api.errors import ApiError
from api.exchange_publishing import (
    publish_to_exchange,
    publishes_through,
    route_fields,
    unknown_exchange,
)
from api.forwarding import NO_LEADER_WAIT_S, queue_route
from api.limits import check_consumer_room
from api.publish_job import publish_of
from api.publishing import MAX_PEER_FORWARD_BYTES, publish_on_route
from api.request_bodies import body_as
from api.routing_names import existing_vhost
from api.settle_options import SETTLES, Touch, settle_options, touch_answer
from api.stream_consumer import LEADER_MOVED, StreamConsumer
from api.stream_frames import BadFrame, Frame
from api.stream_standing import CREDENTIALS_GONE, PERMISSION_REVOKED, StreamStanding
from api.validation import bad, check_queue_name, field_str
from cluster.errors import NodeError, NotLeader, QueueNotFound
from cluster.queues.queue_door import QueueDoor
from cluster.steady_clock import steady_wall_ms
from metadata_state.vhost_names import DEFAULT_VHOST, qualified

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 1024
MAX_REASON = 123  # bytes of a WebSocket close frame's reason
QUEUE_DELETED = "queue_deleted"


class StreamConnection:
    """The node's side of one streaming connection, for the `caller` who opened it."""

    def __init__(self, app: web.Application, ws: web.WebSocketResponse, caller: Principal) -> None:
        self._app = app
        self._ws = ws
        self._caller = caller
        self._standing = StreamStanding(app[CONFIG], app[METADATA], caller)
        self._max_frame = app[CONFIG].max_request_bytes
        self._version: int | None = None
        self._vhost = DEFAULT_VHOST
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._tasks: set[asyncio.Task[None]] = set()
        self._consumers: dict[str, tuple[StreamConsumer, asyncio.Task[None]]] = {}
        self._closed = False
        self._ops: dict[str, Callable[[Frame], Awaitable[bytes | None]]] = {
            "publish": self._publish,
            "consume": self._consume,
            "ack": self._settle,
            "nack": self._settle,
            "touch": self._touch,
            "cancel": self._cancel,
        }
        operations = app[METRICS].stream_operations
        self._counters = {op: operations.labels(op) for op in self._ops}
        self._unwatch = app[METADATA].watch(self._recheck)
        self._unwatch_alarms = app[ALARMS].watch(self._tell_alarms)
        self._publishing = False  # alarms are told to a connection once it published (AMQP's blocked)
        self._told: dict[str, list[str]] = {}
        self._notices: set[asyncio.Task[None]] = set()
        self._expiry: asyncio.TimerHandle | None = None
        self._closing: asyncio.Task[bool] | None = None
        self._arm_expiry()

    async def receive(self, message: WSMessage) -> None:
        """Serve one message of the client: a hello at once, an operation in a task of its own."""
        if message.type is not WSMsgType.BINARY:
            await self._refuse(None, bad("frames are binary WebSocket messages holding msgpack"))
            return
        try:
            limit = frames.HELLO_MAX_BYTES if self._version is None else self._max_frame
            frame = frames.read_frame(message.data, limit)
        except BadFrame as exc:
            await self._refuse(exc.id, exc)
            return
        if frame.op == "hello":
            await self._hello(frame)
        elif self._version is None:
            await self._refuse(frame.id, ApiError(400, "hello_first", "the first frame must be a hello"))
        else:
            self._counters[frame.op].inc()
            await self._slots.acquire()
            task = asyncio.create_task(self._run(frame))
            self._tasks.add(task)
            task.add_done_callback(self._finished)

    async def close(self) -> None:
        """The connection ended: cancel its consumers (what they hold returns to their queues). Publishes
        in progress carry on to their end; their answers go nowhere."""
        self._closed = True
        self._unwatch()
        self._unwatch_alarms()
        if self._expiry is not None:
            self._expiry.cancel()
        consumers, self._consumers = self._consumers, {}
        for consumer, task in consumers.values():
            task.cancel()
            with contextlib.suppress(NodeError):
                if consumer.queue.is_leader:
                    await consumer.queue.cancel(consumer.tag)

    # -- frames ------------------------------------------------------------------------------------

    async def _hello(self, frame: Frame) -> None:
        versions = frame.fields.get("versions")
        common = set(versions) & set(frames.VERSIONS) if isinstance(versions, list) else set()
        if self._version is not None:
            await self._refuse(None, bad("hello was already said"))
            return
        if not common:
            speaks = f"no common version; this node speaks {list(frames.VERSIONS)}"
            await self._refuse(None, ApiError(400, "unsupported_version", speaks))
            await self._ws.close()
            return
        try:
            self._vhost = self._hello_vhost(frame.fields.get("vhost", DEFAULT_VHOST))
        except ApiError as exc:
            await self._refuse(None, exc)
            await self._ws.close()
            return
        self._version = max(common)
        await self._send(frames.hello(self._version, self._app[STATUS].name, self._max_frame))

    async def _run(self, frame: Frame) -> None:
        try:
            answer = await self._ops[frame.op](frame)
        except Exception as exc:
            status, body = error_answer(self._app, exc, f"a streamed {frame.op}")
            await self._send(frames.error(frame.id, status, body))
            if status == 401:  # the credentials expired, or the user is gone
                self._revoke(CREDENTIALS_GONE, str(body.get("reason", "")))
            return
        if answer is not None:
            await self._send(answer)

    def _tell_alarms(self) -> None:
        """Send `blocked` (with the nodes in alarm) when resource alarms begin or change, `unblocked`
        when the last ends, to a connection that published."""
        notice = self._alarm_notice()
        if notice is not None:
            task = asyncio.get_running_loop().create_task(self._send(notice))
            self._notices.add(task)
            task.add_done_callback(self._notices.discard)

    def _alarm_notice(self) -> bytes | None:
        """The frame telling a connection that published of a change in the alarms, if there is one."""
        alarmed = self._app[ALARMS].alarmed()
        if not self._publishing or self._closed or alarmed == self._told:
            return None
        self._told = alarmed
        return frames.blocked(alarmed) if alarmed else frames.unblocked()

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()

    async def _refuse(self, frame_id: int | None, exc: ApiError) -> None:
        status, body = error_answer(self._app, exc, "a frame")
        await self._send(frames.error(frame_id, status, body))

    async def _send(self, data: bytes) -> None:
        """Send a frame, waiting while the client is behind; nothing when the connection is gone."""
        if self._ws.closed:
            return
        with contextlib.suppress(ConnectionError):
            await self._ws.send_bytes(data)

    # -- operations ----------------------------------------------------------------------------------

    async def _publish(self, frame: Frame) -> bytes:
        if "exchange" in frame.fields:
            return await self._publish_to_exchange(frame)
        name = self._queue(frame, Access.WRITE)
        await self._first_publish()
        job = publish_of(frame.fields, self._app[CONFIG], self._app[WALL_MS]())
        route = await queue_route(self._app[QUEUES], self._app[STATUS], name)
        if route is not None and frame.size > MAX_PEER_FORWARD_BYTES:  # too large for the peer transport
            raise NotLeader(f"this node does not lead queue '{name}'", route.target)
        status, body = await publish_on_route(self._app, name, job, self._caller.name, 0, route)
        if status != 201:
            return frames.error(frame.id, status, body)
        return frames.answer("confirm", _id(frame), body)

    async def _first_publish(self) -> None:
        """Tell a connection of the alarms in effect before the answer to its first publish."""
        if not self._publishing:
            self._publishing = True
            notice = self._alarm_notice()
            if notice is not None:
                await self._send(notice)

    async def _publish_to_exchange(self, frame: Frame) -> bytes:
        """A publish through an exchange (`exchange`, `routing_key`, `mandatory`, and the `vhost` and
        `routing_revision` to wait for, if any): `confirm` with the routed answer once every target
        committed its copy."""
        fields = frame.fields
        vhost = fields.pop("vhost", None) or self._vhost
        name = fields.pop("exchange")
        revision = fields.pop("routing_revision", None)
        if not isinstance(name, str) or vhost != self._vhost:
            raise bad(f"exchange must be a string, in the connection's vhost '{self._vhost}'")
        if revision is not None and not (type(revision) is int and revision >= 0):
            raise bad("routing_revision must be a non-negative integer")
        routing_key, mandatory = route_fields(fields)
        caller = self._standing.current()
        if not await publishes_through(self._app[METADATA], caller, vhost, name, routing_key, revision):
            raise unknown_exchange(vhost, name)
        await self._first_publish()
        job = publish_of(fields, self._app[CONFIG], self._app[WALL_MS]())
        status, body = await publish_to_exchange(self._app, vhost, name, routing_key, job, mandatory)
        if status >= 300:
            return frames.error(frame.id, status, body)
        return frames.answer("confirm", _id(frame), body)

    async def _consume(self, frame: Frame) -> None:
        """Register (or resume) a consumer: answer, then deliver (never a delivery before the answer)."""
        name = self._queue(frame, Access.READ)
        resumed = field_str(frame.fields, "tag")
        options = body_as(_untagged(frame), ConsumerOptions)
        queue = await self._led(name)
        if resumed is not None:
            resumed = self._own(queue, resumed)
            if resumed in self._consumers:
                raise ApiError(409, "conflict", f"consumer '{resumed}' already delivers on this connection")
            await queue.resume(resumed)
            tag = resumed
        else:
            check_consumer_room(self._app, name)
            tag = await queue.register_consumer(
                options.prefetch,
                options.priority,
                options.timeout,
                options.since_ms,
                options.auto_ack,
                owner=self._caller.name,
            )
        if self._closed or self._closing is not None:  # ended meanwhile: nobody would take its deliveries
            await queue.cancel(tag)
            return None
        await self._send(frames.answer("consume-ok", _id(frame), {"tag": tag, "hold_ms": queue.hold_ms(tag)}))
        consumer = StreamConsumer(queue, tag, options.prefetch, self._send)
        task = asyncio.create_task(self._deliver(consumer))
        self._consumers[tag] = (consumer, task)
        self._recheck()  # a revocation applied while it was registered: `_recheck` did not know it yet

    async def _deliver(self, consumer: StreamConsumer) -> None:
        metrics, name = self._app[METRICS], consumer.queue.name
        reason = await consumer.deliver(lambda rows: metrics.count_delivered(name, rows))
        if self._consumers.get(consumer.tag, (None,))[0] is not consumer:
            return  # cancelled by the client meanwhile
        del self._consumers[consumer.tag]
        hint = await self._hint_after_change(consumer.queue) if reason == LEADER_MOVED else None
        if reason == LEADER_MOVED and hint is None:
            reason = QUEUE_DELETED
        await self._send(frames.cancelled(consumer.tag, reason, hint=hint))

    async def _settle(self, frame: Frame) -> bytes:
        name = self._queue(frame, Access.READ)
        tag, options = self._tag(frame), settle_options(body_as(_untagged(frame), SETTLES[frame.op]))
        queue = await self._led(name)
        tag = self._own(queue, tag)
        settled = await queue.settle(
            options.ids, tag, options.outcome, options.failed, options.reason, options.delay_ms
        )
        self._app[METRICS].count_settled(name, frame.op, len(options.ids))
        warning = {} if settled.warning is None else {"warning": settled.warning}
        return frames.answer("settled", _id(frame), warning)

    async def _touch(self, frame: Frame) -> bytes:
        name = self._queue(frame, Access.READ)
        tag = self._tag(frame)
        ids = tuple(body_as(_untagged(frame), Touch).ids)
        queue = await self._led(name)
        tag = self._own(queue, tag)
        touched = await queue.touch(ids, tag)
        return frames.answer("touched", _id(frame), touch_answer(queue.hold_ms(tag), touched.warning))

    async def _cancel(self, frame: Frame) -> bytes:
        name = self._queue(frame, Access.READ)
        tag = self._tag(frame)
        if set(frame.fields) - {"tag"}:
            raise bad(f"unknown fields {sorted(set(frame.fields) - {'tag'}, key=str)}")
        queue = await self._led(name)
        tag = self._own(queue, tag)
        mine = self._consumers.pop(tag, None)
        if mine is not None:
            mine[1].cancel()
        await queue.cancel(tag)
        return frames.cancelled(tag, "cancelled", frame.id)

    # -- helpers -------------------------------------------------------------------------------------

    def _hello_vhost(self, vhost: object) -> str:
        """The vhost a hello names (`/` when it names none), which must exist."""
        if not isinstance(vhost, str):
            raise bad("vhost must be a string")
        return existing_vhost(self._app[METADATA], vhost)

    def _queue(self, frame: Frame, access: Access) -> str:
        """The `qualified` name of the frame's queue (taken out of its fields) in the connection's vhost,
        which the caller may access so."""
        name = frame.fields.pop("queue", None)
        if not isinstance(name, str):
            raise bad("queue must be a string")
        check_queue_name(name, self._app[CONFIG].max_queue_name_length)
        queue = qualified(self._vhost, name)
        require(self._standing.current(), access, queue)
        return queue

    @staticmethod
    def _tag(frame: Frame) -> str:
        tag = field_str(frame.fields, "tag")
        if not tag:
            raise bad("tag must be a consumer tag")
        return tag

    def _own(self, queue: QueueDoor, tag: str) -> str:
        """The consumer `tag` names, the caller's own (else UnknownConsumer: `own_consumer`)."""
        return own_consumer(queue, self._standing.current(), tag)

    # -- revocation ----------------------------------------------------------------------------------

    def _arm_expiry(self) -> None:
        """Recheck when the credentials expire (again if the timer fired a moment early)."""
        expires = self._standing.expires_ms
        if expires is not None and not self._closed:
            delay_s = max(0.0, (expires - steady_wall_ms()) / 1000)
            self._expiry = asyncio.get_running_loop().call_later(delay_s, self._at_expiry)

    def _at_expiry(self) -> None:
        self._recheck()
        self._arm_expiry()

    def _recheck(self) -> None:
        """The metadata changed, or the credentials may have expired: a connection whose credentials no
        longer stand, or that has a consumer on a queue its user may no longer read, stops delivering at
        once (this runs as the change is applied, before any delivery task resumes) and is closed."""
        if self._closed:
            return
        try:
            caller = self._standing.current()
        except Unauthenticated as exc:
            self._revoke(CREDENTIALS_GONE, exc.reason)
            return
        for consumer, _ in self._consumers.values():
            if not caller.may(Access.READ, consumer.queue.name):
                self._revoke(PERMISSION_REVOKED, f"read permission on queue '{consumer.queue.name}' revoked")
                return

    def _revoke(self, code: int, reason: str) -> None:
        """Stop every delivery now and close the connection with `code`; closing it cancels its consumers,
        and what they held returns to their queues (`close`)."""
        if self._closing is not None:
            return
        log.info("stream of user %s closed (%d): %s", self._caller.name, code, reason)
        for _, task in self._consumers.values():
            task.cancel()
        self._closing = asyncio.create_task(self._ws.close(code=code, message=reason.encode()[:MAX_REASON]))

    async def _led(self, name: str) -> QueueDoor:
        """The door of queue `name` when this node leads it, else NotLeader with the leader hint."""
        route = await queue_route(self._app[QUEUES], self._app[STATUS], name)
        if route is not None:
            raise NotLeader(f"this node does not lead queue '{name}'", route.target)
        return self._app[QUEUES].leading_door(name)

    async def _hint_after_change(self, queue: QueueDoor) -> dict[str, str | None] | None:
        """Where `queue` is led after this node stopped leading it (None when it is gone), waiting up to
        NO_LEADER_WAIT_S for this node to know the new leader."""
        try:
            leader = await self._app[QUEUES].leader_within(queue.name, NO_LEADER_WAIT_S)
        except QueueNotFound:
            return None
        return {"leader": leader, "leader_http": self._app[STATUS].node_http(leader)}


def _untagged(frame: Frame) -> dict[str, object]:
    """A frame's fields but its consumer tag: the body of its consume, settle or touch."""
    return {name: value for name, value in frame.fields.items() if name != "tag"}


def _id(frame: Frame) -> int:
    assert frame.id is not None  # read_frame gives every operation but a hello an id
    return frame.id
