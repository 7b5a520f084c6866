"""The workload's AMQP 0-9-1 links (`jepsen_tests.links`), through aio-pika as RabbitMQ applications use
it: one connection per link to one node's listener, which reaches every queue's leader itself.

A publish link has a channel in confirm mode and sends one message at a time: its `basic.ack` is the
confirm. Anything else is an unknown outcome, never a certain refusal: quorumq nacks a publish it
refused *or* could not confirm in time (docs/use/amqp.md), a timeout (error `timeout`, as the HTTP
client's) or a lost connection leaves the publish in flight, and a publish returned as unroutable
(`returned`: its queue or binding not there yet) is no confirm either. The message's priority, id (what
a deduplication window takes) and group (the header `x-group-id`) travel as AMQP properties and
headers; aio-pika gives a publish without an id a random one, so every AMQP publish passes a work
queue's deduplication window under an id of its own. A fanout publish's confirm names no queues, so
unlike an HTTP one it cannot be caught short-routed.

A consume link has a consumer with manual acks and a prefetch; its deliveries wait in an inbox until the
workload polls them. An ack or nack is fire-and-forget in AMQP: one lost with the connection leaves the
delivery unacked, and the listener hands every unacked delivery of a closed connection back at once.
AMQP has no touch and no delayed nack, so the link offers neither.

A link whose connection or channel closed (a killed node, missed heartbeats), or whose consumer quorumq
cancelled (its queue gone, its timeout), is `broken`: it hands out nothing more, not even what reached
its inbox before (back in the queue already), and its client connects again, to a node drawn afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

import aio_pika
import aio_pika.abc
import aio_pika.exceptions
import aiormq.exceptions
from pamqp import commands

from quorumq import Delivery, Message, QuorumqError
from quorumq.messages import GROUP_HEADER

HEARTBEAT_S = 5
"""The heartbeat the client asks for: a connection to a node cut off is found dead within two."""
CONNECT_TIMEOUT_S = 2.0
AMQP_FAILURES = aio_pika.exceptions.CONNECTION_EXCEPTIONS
"""What aio-pika raises for a refusal, a nack or return, a closed channel or connection, or no answer in
time (TimeoutError is an OSError)."""
NACKED = "nacked"
RETURNED = "returned"
TIMEOUT = "timeout"
CLOSED = "connection_closed"


def unknown(exc: BaseException) -> QuorumqError:
    """An AMQP failure as the workload's error: no answer it could rely on (status 0)."""
    if isinstance(exc, TimeoutError):
        code = TIMEOUT
    elif isinstance(exc, aiormq.exceptions.PublishError):
        code = RETURNED
    elif isinstance(exc, aiormq.exceptions.DeliveryError):
        code = NACKED
    else:
        code = type(exc).__name__
    return QuorumqError(0, code, str(exc))


@contextlib.asynccontextmanager
async def connected(url: str) -> AsyncIterator[aio_pika.abc.AbstractConnection]:
    """A connection to `url` with heartbeats, closed (as far as it still can be) on leaving; a failure to
    connect is a QuorumqError."""
    try:
        connection = await aio_pika.connect(f"{url}?heartbeat={HEARTBEAT_S}", timeout=CONNECT_TIMEOUT_S)
    except AMQP_FAILURES as exc:
        raise unknown(exc) from exc
    try:
        yield connection
    finally:
        with contextlib.suppress(*AMQP_FAILURES):
            await asyncio.wait_for(connection.close(), CONNECT_TIMEOUT_S)


def closed(connection: aio_pika.abc.AbstractConnection, channel: aio_pika.abc.AbstractChannel | None) -> bool:
    """Whether a link's connection or its channel (None before it opened) is closed."""
    return connection.is_closed or channel is None or channel.is_closed


class AmqpPublishLink:
    """Publishes with confirms on one channel of `connection`, each confirm awaited up to `timeout`."""

    def __init__(self, connection: aio_pika.abc.AbstractConnection, timeout: float) -> None:
        self._connection = connection
        self._timeout = timeout
        self._channel: aio_pika.abc.AbstractChannel | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def opened(cls, url: str, timeout: float) -> AsyncIterator[AmqpPublishLink]:
        """A link on a new connection to `url`."""
        async with connected(url) as connection:
            link = cls(connection, timeout)
            try:
                link._channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
            except AMQP_FAILURES as exc:
                raise unknown(exc) from exc
            yield link

    @property
    def broken(self) -> bool:
        return closed(self._connection, self._channel)

    def _open_channel(self) -> aio_pika.abc.AbstractChannel:
        if self._channel is None or self.broken:
            raise QuorumqError(0, CLOSED, "the AMQP connection or channel closed")
        return self._channel

    async def declare_fanout(self, exchange: str, queues: Sequence[str]) -> None:
        """exchange.declare (durable, as the HTTP clients declare it) and a queue.bind per queue; the
        connection's later publishes route once its node applied them."""
        channel = self._open_channel()
        try:
            await channel.declare_exchange(exchange, aio_pika.ExchangeType.FANOUT, durable=True)
            for queue in queues:
                declared = await channel.get_queue(queue, ensure=False)
                await declared.bind(exchange, routing_key="")
        except AMQP_FAILURES as exc:
            raise unknown(exc) from exc

    async def send(self, target: str, message: Message, fanned_to: Sequence[str] = ()) -> str | None:
        channel = self._open_channel()
        body = message.body.encode() if isinstance(message.body, str) else message.body
        headers: dict[str, aio_pika.abc.FieldValue] | None = None
        if message.group is not None:
            headers = {GROUP_HEADER: message.group}
        amqp = aio_pika.Message(
            body, priority=message.priority, message_id=message.message_id, headers=headers
        )
        try:
            if fanned_to:
                exchange = await channel.get_exchange(target, ensure=False)
                await exchange.publish(amqp, routing_key="", timeout=self._timeout)
            else:
                await channel.default_exchange.publish(amqp, routing_key=target, timeout=self._timeout)
        except AMQP_FAILURES as exc:
            raise unknown(exc) from exc
        return None


class AmqpConsumeLink:
    """A consumer of one queue on one channel of `connection`, `prefetch` unacked deliveries at most."""

    touches = False
    delays_nacks = False

    def __init__(self, connection: aio_pika.abc.AbstractConnection) -> None:
        self._connection = connection
        self._channel: aio_pika.abc.AbstractChannel | None = None
        self._cancelled = False
        self._inbox: asyncio.Queue[aio_pika.abc.AbstractIncomingMessage] = asyncio.Queue()
        self._held: dict[int, aio_pika.abc.AbstractIncomingMessage] = {}
        self._next_id = 0

    @classmethod
    @contextlib.asynccontextmanager
    async def opened(cls, url: str, queue: str, prefetch: int) -> AsyncIterator[AmqpConsumeLink]:
        """A link consuming `queue` on a new connection to `url`; leaving it closes the connection, which
        hands back whatever it holds unacked."""
        async with connected(url) as connection:
            link = cls(connection)
            try:
                channel = link._channel = await connection.channel()
                await channel.set_qos(prefetch_count=prefetch)
                underlay = await channel.get_underlay_channel()
                underlay.on_consumer_cancel_callbacks.add(link._on_cancel)
                consumed = await channel.get_queue(queue, ensure=False)
                await consumed.consume(link._inbox.put, no_ack=False)
            except AMQP_FAILURES as exc:
                raise unknown(exc) from exc
            yield link

    @property
    def broken(self) -> bool:
        """Whether the connection or channel closed or quorumq cancelled the consumer."""
        return closed(self._connection, self._channel) or self._cancelled

    async def _on_cancel(self, frame: commands.Basic.Cancel) -> None:
        self._cancelled = True

    async def deliveries(self, max: int, wait: float) -> list[Delivery]:
        """What arrived, up to `max`, waiting up to `wait` for the first; a QuorumqError once the link is
        broken (what its inbox still holds went back to the queue)."""
        self._raise_when_broken()
        try:
            first = await asyncio.wait_for(self._inbox.get(), wait)
        except TimeoutError:
            self._raise_when_broken()
            return []
        self._raise_when_broken()
        batch = [first]
        while len(batch) < max and not self._inbox.empty():
            batch.append(self._inbox.get_nowait())
        return [self._held_as_delivery(message) for message in batch]

    def _raise_when_broken(self) -> None:
        if self.broken:
            raise QuorumqError(
                0, CLOSED, "the AMQP connection or channel closed, or the consumer was cancelled"
            )

    def _held_as_delivery(self, message: aio_pika.abc.AbstractIncomingMessage) -> Delivery:
        """A delivery the workload settles by an id of the link's own (delivery tags restart with each
        channel)."""
        self._next_id += 1
        self._held[self._next_id] = message
        headers = dict(message.headers or {})
        return Delivery(self._next_id, message.body, headers, redelivered=bool(message.redelivered))

    async def ack(self, ids: Sequence[int]) -> None:
        await self._settle(ids, None)

    async def nack(self, ids: Sequence[int], requeue: bool, delay_ms: int | None) -> None:
        await self._settle(ids, requeue)

    async def touch(self, ids: Sequence[int]) -> None:
        raise QuorumqError(0, "unsupported", "AMQP has no touch")

    async def _settle(self, ids: Sequence[int], requeue: bool | None) -> None:
        """basic.ack (`requeue` None) or basic.nack of each id; every id is settled or given up."""
        failure: BaseException | None = None
        for id_ in ids:
            message = self._held.pop(id_)
            try:
                if requeue is None:
                    await message.ack()
                else:
                    await message.nack(requeue=requeue)
            except AMQP_FAILURES as exc:
                failure = exc
        if failure is not None:
            raise unknown(failure) from failure
