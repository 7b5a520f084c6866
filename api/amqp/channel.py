"""One AMQP channel: its methods served in the order they arrive, with RabbitMQ's semantics for quorum
queues, through `NodeCalls` (its exchange and binding methods by `ExchangeMethods`).

Publishes do not hold up the methods behind them: a channel's publishes to one queue through the default
exchange, or through another exchange with one routing key, that arrive while the previous batch of
theirs is in flight go out as the next batch (one Raft entry per queue for many messages), each batch
deduplicated by the channel's publisher id and a seq, so a retry inside the node never enqueues a
message twice in a queue. A batch through an exchange is routed on this node, to every queue its
bindings reach. In confirm mode each message is acked once quorumq answered its batch 201 (a majority of
each queue it reached committed it), nacked when quorumq refused it for certain or gave no answer in
time. A message that reaches no queue (no queue of its routing key's name through the default exchange,
no binding that matches) is dropped, or returned first when `mandatory`, and confirmed either way, as
RabbitMQ does.

Deliveries (to consumers and gets) take the channel's delivery tags, from 1. A consumer is a task that
polls its queue for as many messages as its prefetch leaves room for and writes them as `basic.deliver`s,
many to a write (DELIVERY_WRITE_BYTES); when quorumq ends the consumer (its queue deleted, its timeout)
the channel tells the client with `basic.cancel`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from pamqp import commands
from pamqp.base import Frame
from pamqp.body import ContentBody
from pamqp.frame import FrameTypes
from pamqp.header import ContentHeader

from api.amqp.byte_budget import ByteBudget
from api.amqp.confirms import ConfirmTags
from api.amqp.content import Content, ContentAssembly
from api.amqp.delivery_frames import content_frames, deliver_frame, row_content
from api.amqp.exchange_methods import ExchangeMethods
from api.amqp.frame_io import encode_frame
from api.amqp.node_calls import NodeCalls, again_while
from api.amqp.properties import json_table, published_fields
from api.amqp.reply_codes import (
    INTERNAL_ERROR,
    NO_ROUTE,
    NOT_ALLOWED,
    NOT_FOUND,
    NOT_IMPLEMENTED,
    PRECONDITION_FAILED,
    AmqpError,
    channel_error,
    for_answer,
)
from cluster.queues.queue_results import MessageRow
from cluster.replication.stored_message import published_route

log = logging.getLogger(__name__)

MAX_BATCH = 1000  # messages of one publish batch (the HTTP API's limit per request)
DELIVERY_WRITE_BYTES = 256 * 1024
"""A poll's deliveries go out in writes of about this many body bytes (or one larger body): one system
call for many messages, each write waiting while the client is behind."""
PUBLISH_RETRY_S = 60.0  # how long a batch is retried while quorumq cannot answer it (no leader)
DEFAULT_EXCHANGE = ""
DEFAULT_EXCHANGE_NAMES = (DEFAULT_EXCHANGE, "amq.default")  # the two names clients give it


class Wire(Protocol):
    """What a channel needs of its connection."""

    frame_max: int

    async def send(self, channel: int, frames: Iterable[FrameTypes]) -> None:
        """Write `frames` on `channel` together, then wait while the client is behind."""
        ...

    async def write(self, encoded: bytes) -> None:
        """Write frames encoded already, then wait while the client is behind."""
        ...

    async def refuse(self, channel: int, error: AmqpError) -> None:
        """Close `channel` (or the connection) for `error`, found outside the channel's methods."""
        ...

    def publishing(self) -> None:
        """A channel of the connection published (it is told of resource alarms from now on)."""
        ...


@dataclass(frozen=True)
class _Route:
    """Where a channel's publishes go, which those of one batch share: the exchange ("" the default one)
    and the routing key."""

    exchange: str
    routing_key: str


@dataclass
class _Held:
    """A delivery not settled yet: its queue, its quorumq consumer (None for a get) and message id."""

    queue: str
    consumer: str | None
    message: int


@dataclass
class _Pending:
    """A message waiting for its batch: its confirm tag (0 outside confirm mode), what it came as, and
    where it goes."""

    tag: int
    content: Content
    fields: dict[str, Any]
    route: _Route


_Lane = _Route | None
"""A channel's publishes that go in order, one batch at a time: those to one queue through the default
exchange (its route), or every one through a named exchange (None), which may reach any queue: RabbitMQ
keeps a channel's publishes in order in each queue they reach."""


class Channel:
    """Channel `number` of a connection, for the user `node` acts for."""

    def __init__(
        self, number: int, wire: Wire, node: NodeCalls, max_body_bytes: int, budget: ByteBudget
    ) -> None:
        self.number = number
        self._wire = wire
        self._node = node
        self._budget = budget
        self._content = ContentAssembly(max_body_bytes)
        self._confirms: ConfirmTags | None = None
        self._publisher = f"amqp-{secrets.token_hex(8)}"
        self._batches = itertools.count(1)
        self._pending: dict[_Lane, list[_Pending]] = {}
        self._publishing: dict[_Lane, asyncio.Task[None]] = {}
        self._prefetch = 0
        self._tags = itertools.count(1)
        self._held: dict[int, _Held] = {}
        self._returned: set[int] = set()  # deliveries of cancelled consumers: back in their queue
        self._consumers: dict[
            str, tuple[str, str, asyncio.Task[None]]
        ] = {}  # ctag -> queue, quorumq tag, task
        self.closed = False
        routing = ExchangeMethods(node)
        self._methods: dict[type[Frame], Callable[[Any], Awaitable[Frame | None]]] = {
            commands.Queue.Declare: self._queue_declare,
            commands.Queue.Delete: self._queue_delete,
            commands.Queue.Purge: self._queue_purge,
            commands.Queue.Bind: routing.bind_queue,
            commands.Queue.Unbind: routing.unbind_queue,
            commands.Exchange.Declare: routing.declare,
            commands.Exchange.Delete: routing.delete,
            commands.Exchange.Bind: routing.bind_exchange,
            commands.Exchange.Unbind: routing.unbind_exchange,
            commands.Basic.Qos: self._qos,
            commands.Basic.Consume: self._consume,
            commands.Basic.Cancel: self._cancel,
            commands.Basic.Get: self._get,
            commands.Basic.Nack: self._nack,
            commands.Basic.Reject: self._reject,
            commands.Basic.Recover: self._recover,
            commands.Confirm.Select: self._confirm_select,
            commands.Tx.Select: self._tx,
            commands.Tx.Commit: self._tx,
            commands.Tx.Rollback: self._tx,
            commands.Channel.Flow: self._flow,
        }

    # -- frames ------------------------------------------------------------------------------------

    async def method(self, frame: Frame) -> None:
        """Serve a method frame (in order with the channel's others); a content-carrying publish only
        starts its content."""
        if isinstance(frame, commands.Basic.Publish):
            self._content.start(frame)
            return
        if self._content.expecting:
            self._content.start(commands.Basic.Publish())  # raises: a method inside a message's content
        serve = self._methods.get(type(frame))
        if serve is None:
            raise channel_error(NOT_IMPLEMENTED, f"{frame.name} is not served on a channel")
        answer = await serve(frame)
        if answer is not None and not getattr(frame, "nowait", False):
            await self._wire.send(self.number, [answer])

    async def header(self, header: ContentHeader) -> None:
        """A content header: a message is whole when its body is empty."""
        content = self._content.header(header)
        if content is not None:
            await self._published(content)

    async def body(self, body: ContentBody) -> None:
        """A content body frame: a message is whole once its last one arrived."""
        content = self._content.body(body)
        if content is not None:
            await self._published(content)

    async def close(self) -> None:
        """The channel ends (closed by either side, or its connection ended): its consumers end and what
        they and its gets hold returns to the queues. Publishes in flight run to their end; their confirms
        go nowhere."""
        self.closed = True
        consumers, self._consumers = self._consumers, {}
        for _, _, task in consumers.values():
            task.cancel()
        cancelled = {(queue, tag) for queue, tag, _ in consumers.values()}
        got = [held for held in self._held.values() if held.consumer is None]
        self._held.clear()
        for queue, tag in cancelled:
            await _best_effort(self._node.cancel(queue, tag), f"cancelling consumer {tag} of {queue}")
        for (queue, _), group in itertools.groupby(sorted(got, key=_key), key=_key):
            ids = [h.message for h in group]
            await _best_effort(
                self._node.settle(queue, None, ids, ack=False, requeue=True), f"returning gets of {queue}"
            )

    # -- publishing -----------------------------------------------------------------------------------

    async def _published(self, content: Content) -> None:
        method = content.method
        user_id = content.properties.user_id
        if user_id and user_id != self._node.user:  # as RabbitMQ: no message claims another user
            raise channel_error(
                PRECONDITION_FAILED,
                f"user_id property set to '{user_id}' but authenticated user was '{self._node.user}'",
            )
        self._wire.publishing()
        fields = published_fields(content.properties, content.body)
        tag = self._confirms.take()[0] if self._confirms is not None else 0
        exchange = DEFAULT_EXCHANGE if method.exchange in DEFAULT_EXCHANGE_NAMES else method.exchange
        route = _Route(exchange, method.routing_key)
        lane = route if exchange == DEFAULT_EXCHANGE else None
        self._pending.setdefault(lane, []).append(_Pending(tag, content, fields, route))
        self._budget.take(len(content.body))
        if lane not in self._publishing:
            self._publishing[lane] = asyncio.create_task(self._publish_batches(lane))
        await self._budget.room()  # the connection reads no more until confirms make room

    async def _publish_batches(self, lane: _Lane) -> None:
        """Publish the lane's messages in order, a batch at a time: each batch the next ones that share
        a route, up to MAX_BATCH."""
        route = lane
        try:
            while pending := self._pending.get(lane):
                route = pending[0].route
                size = next(
                    (n for n, p in enumerate(pending[:MAX_BATCH]) if p.route != route),
                    min(len(pending), MAX_BATCH),
                )
                batch, self._pending[lane] = pending[:size], pending[size:]
                try:
                    status, body = await self._publish_batch(route, batch)
                finally:
                    self._budget.give(sum(len(p.content.body) for p in batch))
                await self._answer_batch(route, batch, status, body)
        except AmqpError as exc:
            await self._wire.refuse(self.number, exc)
        except Exception:
            log.exception("publishing a batch to %s on AMQP channel %d", route, self.number)
            await self._wire.refuse(self.number, channel_error(INTERNAL_ERROR, "the node failed to publish"))
        finally:
            self._publishing.pop(lane, None)
            left = self._pending.pop(lane, [])  # not sent (the channel failed): nothing holds them now
            self._budget.give(sum(len(p.content.body) for p in left))

    async def _publish_batch(self, route: _Route, batch: list[_Pending]) -> tuple[int, dict[str, Any]]:
        """quorumq's answer to one batch: to the queue the routing key names through the default
        exchange, else through the exchange. Retried with the same seq (so never enqueued twice in a
        queue) while there is none to give (503: no leader, an outcome unknown, a resource alarm, an
        overloaded leader, routing changes of the connection's own not applied here yet) or a queue
        it was routed to is gone since (404 beside the copies routed: routed again), for
        PUBLISH_RETRY_S."""
        seq = next(self._batches)
        messages = [p.fields for p in batch]
        exchange, key = route.exchange, route.routing_key
        if exchange == DEFAULT_EXCHANGE:
            return await again_while(
                lambda: self._node.publish(key, messages, self._publisher, seq),
                lambda status, _: status == 503,
                PUBLISH_RETRY_S,
                stop=lambda: self.closed,
            )
        mandatory = any(p.content.method.mandatory for p in batch)
        return await again_while(
            lambda: self._node.publish_to_exchange(exchange, key, messages, self._publisher, seq, mandatory),
            lambda status, body: status == 503 or (status == 404 and "routed" in body),
            PUBLISH_RETRY_S,
            stop=lambda: self.closed,
        )

    async def _answer_batch(
        self, route: _Route, batch: list[_Pending], status: int, body: dict[str, Any]
    ) -> None:
        """Confirm a batch quorumq took, after returning its `mandatory` messages that reached no queue
        (listed `unroutable`; all of them for no queue of the name through the default exchange), as
        RabbitMQ orders them; close the channel for what RabbitMQ closes it for (no such exchange, no
        permission, an internal exchange, a message refused); else nack it."""
        if 200 <= status < 300:
            unroutable = [batch[position] for position in body.get("unroutable", ())]
        elif status == 404 and body.get("error") == "not_found" and route.exchange == DEFAULT_EXCHANGE:
            unroutable = batch
        elif status in (400, 403, 404, 413, 422):
            raise for_answer(status, body)
        elif self._confirms is not None:  # refused (a full queue) or no answer in time: the client decides
            await self._confirm(batch, ack=False)
            return
        else:
            log.info("an AMQP publish to %s was not enqueued (%d %s)", route, status, body.get("error"))
            return
        for pending in unroutable:
            if pending.content.method.mandatory:
                await self._return(pending.content)
        await self._confirm(batch, ack=True)

    async def _confirm(self, batch: list[_Pending], ack: bool) -> None:
        if self._confirms is None or self.closed:
            return
        frames: list[Frame] = []
        for run in _runs(p.tag for p in batch if p.tag):  # 0: published before confirm.select
            for confirm in self._confirms.settle(run, ack):
                kind = commands.Basic.Ack if ack else commands.Basic.Nack
                frames.append(kind(delivery_tag=confirm.delivery_tag, multiple=confirm.multiple))
        await self._wire.send(self.number, frames)

    async def _return(self, content: Content) -> None:
        method = content.method
        returned = commands.Basic.Return(
            reply_code=NO_ROUTE,
            reply_text="NO_ROUTE",
            exchange=method.exchange,
            routing_key=method.routing_key,
        )
        properties = content.properties.marshal()
        frames = content_frames(self.number, properties, content.body, self._wire.frame_max)
        await self._wire.write(encode_frame(returned, self.number) + frames)

    # -- queues --------------------------------------------------------------------------------------

    async def _queue_declare(self, method: commands.Queue.Declare) -> Frame:
        name = method.queue or f"amq.gen-{secrets.token_urlsafe(16).replace('_', '-')}"
        if not method.passive:
            for flag, wrong in (("non-durable", not method.durable), ("exclusive", method.exclusive)):
                if wrong:
                    raise channel_error(PRECONDITION_FAILED, f"invalid property '{flag}' for queue '{name}'")
            if method.auto_delete:
                raise channel_error(PRECONDITION_FAILED, f"invalid property 'auto-delete' for queue '{name}'")
            arguments = _declared_arguments(json_table(method.arguments))
            await self._node.declare(name, arguments)
        ready, consumers = await self._node.counts(name)
        return commands.Queue.DeclareOk(queue=name, message_count=ready, consumer_count=consumers)

    async def _queue_delete(self, method: commands.Queue.Delete) -> Frame:
        try:
            ready, _ = await self._node.counts(method.queue)
        except AmqpError as exc:
            if exc.code == NOT_FOUND:  # RabbitMQ answers a delete of no queue with delete-ok
                return commands.Queue.DeleteOk(message_count=0)
            raise
        await self._node.delete(method.queue, method.if_unused, method.if_empty)
        return commands.Queue.DeleteOk(message_count=ready)

    async def _queue_purge(self, method: commands.Queue.Purge) -> Frame:
        return commands.Queue.PurgeOk(message_count=await self._node.purge(method.queue))

    # -- consuming ------------------------------------------------------------------------------------

    async def _qos(self, method: commands.Basic.Qos) -> Frame:
        if method.prefetch_size:
            raise channel_error(NOT_IMPLEMENTED, "prefetch_size != 0")
        self._prefetch = method.prefetch_count
        return commands.Basic.QosOk()

    async def _consume(self, method: commands.Basic.Consume) -> Frame | None:
        ctag = method.consumer_tag or f"amq.ctag-{secrets.token_urlsafe(16)}"
        if ctag in self._consumers:
            raise channel_error(NOT_ALLOWED, f"attempt to reuse consumer tag '{ctag}'")
        if method.exclusive:
            raise channel_error(
                PRECONDITION_FAILED, "exclusive consumers are not served; use x-single-active-consumer"
            )
        priority = (method.arguments or {}).get("x-priority", 0)
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise channel_error(PRECONDITION_FAILED, f"x-priority must be an integer, got {priority!r}")
        tag = await self._node.register(method.queue, self._prefetch, priority, method.no_ack)
        ok = commands.Basic.ConsumeOk(consumer_tag=ctag)
        if not method.nowait:
            await self._wire.send(self.number, [ok])
        task = asyncio.create_task(self._deliver(ctag, method.queue, tag, method.no_ack, self._prefetch))
        self._consumers[ctag] = (method.queue, tag, task)
        return None  # consume-ok went out before the first delivery

    async def _deliver(self, ctag: str, queue: str, tag: str, no_ack: bool, prefetch: int) -> None:
        try:
            while not self.closed:
                rows = await self._node.poll(queue, tag, prefetch or MAX_BATCH, no_ack)
                for chunk in _write_chunks(rows):
                    # Tags are given as their deliveries are written (`write` writes before it first
                    # waits): the client sees a channel's tags in order, and a `multiple` ack names
                    # only deliveries that went out.
                    await self._wire.write(self._delivered(ctag, queue, tag, no_ack, chunk))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # quorumq ended it (its queue is gone, its timeout), no leader for long
            if self._consumers.pop(ctag, None) is not None and not self.closed:
                log.info("AMQP consumer %s of %s ended: %s", ctag, queue, exc)
                self._forget_holds(tag)
                if not isinstance(exc, AmqpError):
                    await _best_effort(self._node.cancel(queue, tag), f"cancelling consumer {tag} of {queue}")
                await self._wire.send(self.number, [commands.Basic.Cancel(consumer_tag=ctag, nowait=True)])

    def _delivered(self, ctag: str, queue: str, tag: str, no_ack: bool, rows: list[MessageRow]) -> bytes:
        """The frames of `rows` as consumer `ctag`'s deliveries, encoded, each given the channel's next
        tag and held until settled (unless `no_ack`)."""
        frames: list[bytes] = []
        channel, frame_max = self.number, self._wire.frame_max
        for row in rows:
            delivery = next(self._tags)
            exchange, routing_key = published_route(row.headers, queue)
            frames += (
                deliver_frame(channel, ctag, delivery, row.redelivered, exchange, routing_key),
                row_content(channel, row, frame_max),
            )
            if not no_ack:
                self._held[delivery] = _Held(queue, tag, row.id)
        return b"".join(frames)

    def stop_deliveries(self) -> None:
        """Deliver no more (the connection is closing): what consumers hold returns when the channel
        closes."""
        for _, _, task in self._consumers.values():
            task.cancel()

    def _forget_holds(self, tag: str) -> None:
        """Consumer `tag` ended and what it held went back to its queue: settling those deliveries
        later is accepted and does nothing (they are delivered again)."""
        returned = {delivery for delivery, held in self._held.items() if held.consumer == tag}
        for delivery in returned:
            del self._held[delivery]
        self._returned |= returned

    async def _cancel(self, method: commands.Basic.Cancel) -> Frame:
        mine = self._consumers.pop(method.consumer_tag or "", None)
        if mine is not None:
            queue, tag, task = mine
            task.cancel()
            self._forget_holds(tag)
            await self._node.cancel(queue, tag)  # what it held returns to the queue
        return commands.Basic.CancelOk(consumer_tag=method.consumer_tag)

    async def _get(self, method: commands.Basic.Get) -> Frame | None:
        row = await self._node.get(method.queue, method.no_ack)
        if row is None:
            return commands.Basic.GetEmpty()
        delivery = next(self._tags)
        if not method.no_ack:
            self._held[delivery] = _Held(method.queue, None, row.id)
        try:
            ready, _ = await self._node.counts(method.queue)
        except AmqpError:  # the message is taken: answer it, with a count not known
            ready = 0
        exchange, routing_key = published_route(row.headers, method.queue)
        ok = commands.Basic.GetOk(
            delivery_tag=delivery,
            redelivered=row.redelivered,
            exchange=exchange,
            routing_key=routing_key,
            message_count=ready,
        )
        await self._wire.write(
            encode_frame(ok, self.number) + row_content(self.number, row, self._wire.frame_max)
        )
        return None  # get-ok went out with its content

    async def ack(self, acks: list[commands.Basic.Ack]) -> None:
        """Serve acks that arrived one after another: every delivery they name settled at once, in one
        call per queue and consumer."""
        if self._content.expecting:
            self._content.start(commands.Basic.Publish())  # raises: a method inside a message's content
        tags: set[int] = set()
        for method in acks:
            tags.update(self._named(method.delivery_tag or 0, method.multiple) - tags)
        await self._settle_tags(tags, ack=True, requeue=False)

    async def _nack(self, method: commands.Basic.Nack) -> None:
        await self._settle(method.delivery_tag, method.multiple, ack=False, requeue=method.requeue)

    async def _reject(self, method: commands.Basic.Reject) -> None:
        await self._settle(method.delivery_tag or 0, False, ack=False, requeue=method.requeue)

    async def _recover(self, method: commands.Basic.Recover) -> Frame:
        if not method.requeue:
            raise channel_error(NOT_IMPLEMENTED, "basic.recover with requeue=false")
        await self._settle(0, True, ack=False, requeue=True)
        return commands.Basic.RecoverOk()

    async def _settle(self, delivery_tag: int, multiple: bool, ack: bool, requeue: bool) -> None:
        await self._settle_tags(self._named(delivery_tag, multiple), ack, requeue)

    def _named(self, delivery_tag: int, multiple: bool) -> set[int]:
        """The held deliveries a settle names: with `multiple` every one up to `delivery_tag` (0: all),
        else that one (none when its consumer was cancelled since; PRECONDITION_FAILED when it was never
        handed out or is settled already)."""
        if multiple:
            self._returned = {t for t in self._returned if delivery_tag != 0 and t > delivery_tag}
            return {t for t in self._held if delivery_tag == 0 or t <= delivery_tag}
        if delivery_tag in self._returned:  # its consumer was cancelled: it went back to the queue
            self._returned.discard(delivery_tag)
            return set()
        if delivery_tag not in self._held:
            raise channel_error(PRECONDITION_FAILED, f"unknown delivery tag {delivery_tag}")
        return {delivery_tag}

    async def _settle_tags(self, tags: set[int], ack: bool, requeue: bool) -> None:
        held = sorted(((t, self._held[t]) for t in tags), key=lambda item: _key(item[1]))
        for (queue, consumer), group in itertools.groupby(held, key=lambda item: _key(item[1])):
            settled = list(group)
            holder = consumer or None
            await self._node.settle(queue, holder, [h.message for _, h in settled], ack, requeue)
            for tag, _ in settled:
                self._held.pop(tag, None)

    async def _confirm_select(self, method: commands.Confirm.Select) -> Frame:
        if self._confirms is None:
            self._confirms = ConfirmTags()
        return commands.Confirm.SelectOk()

    async def _tx(self, method: Frame) -> Frame:
        raise channel_error(NOT_IMPLEMENTED, "transactions are not served; use publisher confirms")

    async def _flow(self, method: commands.Channel.Flow) -> Frame:
        if not method.active:
            raise channel_error(NOT_IMPLEMENTED, "channel.flow(active=false)")
        return commands.Channel.FlowOk(active=True)


def _write_chunks(rows: list[MessageRow]) -> Iterator[list[MessageRow]]:
    """`rows` in runs of about DELIVERY_WRITE_BYTES of bodies (a body larger than that alone)."""
    chunk: list[MessageRow] = []
    body_bytes = 0
    for row in rows:
        chunk.append(row)
        body_bytes += len(row.body)
        if body_bytes >= DELIVERY_WRITE_BYTES:
            yield chunk
            chunk, body_bytes = [], 0
    if chunk:
        yield chunk


def _declared_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """A declare's arguments as quorumq takes them: `x-dead-letter-exchange` (`amq.default` is the
    default exchange, "") and `x-dead-letter-routing-key` as given, checked where any declare is, but
    through the default exchange with a routing key Q, RabbitMQ's common way to name a dead-letter queue,
    as `x-dead-letter-queue` Q: it routes the same, and a queue declared so before this listener took
    exchanges keeps its arguments, so that its declare still matches them."""
    exchange = arguments.get("x-dead-letter-exchange")
    if exchange is None or exchange not in DEFAULT_EXCHANGE_NAMES:
        return arguments
    arguments = {**arguments, "x-dead-letter-exchange": DEFAULT_EXCHANGE}
    key = arguments.get("x-dead-letter-routing-key")
    if not isinstance(key, str) or not key:
        return arguments
    del arguments["x-dead-letter-exchange"], arguments["x-dead-letter-routing-key"]
    if arguments.setdefault("x-dead-letter-queue", key) != key:
        raise channel_error(PRECONDITION_FAILED, "x-dead-letter-queue and x-dead-letter-routing-key differ")
    return arguments


def _key(held: _Held) -> tuple[str, str]:
    """What settles a held delivery: its queue and consumer ("" for a get), comparable for sorting."""
    return held.queue, held.consumer or ""


async def _best_effort(call: Awaitable[object], what: str) -> None:
    """Await `call`, logging rather than raising what fails: cleanup goes on with the rest."""
    try:
        await call
    except Exception as exc:
        log.info("AMQP cleanup: %s failed: %s", what, exc)


def _runs(tags: Iterable[int]) -> list[range]:
    """`tags` (ascending) as runs of consecutive tags."""
    runs: list[range] = []
    for tag in tags:
        if runs and runs[-1].stop == tag:
            runs[-1] = range(runs[-1].start, tag + 1)
        else:
            runs.append(range(tag, tag + 1))
    return runs
