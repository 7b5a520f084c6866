"""The RabbitMQ side of the benchmark: aio-pika (AMQP 0-9-1, asyncio) against quorum queues."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractConnection, AbstractIncomingMessage
from pamqp.common import FieldTable

from bench.drivers import OnMessage

QUORUM: FieldTable = {"x-queue-type": "quorum"}


class RabbitConnection:
    """One AMQP connection with one confirming channel."""

    def __init__(self, connection: AbstractConnection, channel: AbstractChannel, queue: str) -> None:
        self._connection = connection
        self._channel = channel
        self._queue = queue
        self._unconfirmed: set[asyncio.Future[Any]] = set()

    async def send(self, body: bytes) -> asyncio.Future[Any]:
        message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        confirm = asyncio.ensure_future(self._channel.default_exchange.publish(message, self._queue))
        self._unconfirmed.add(confirm)
        confirm.add_done_callback(self._unconfirmed.discard)
        return confirm

    async def flush(self) -> None:
        if self._unconfirmed:
            await asyncio.gather(*self._unconfirmed)

    async def consume(self, prefetch: int, on_message: OnMessage, stop: asyncio.Event) -> None:
        await self._channel.set_qos(prefetch_count=prefetch)
        queue = await self._channel.get_queue(self._queue, ensure=False)
        ack_every = max(1, prefetch // 4)
        unacked: list[AbstractIncomingMessage] = []

        async def handle(message: AbstractIncomingMessage) -> None:
            on_message(message.body)
            unacked.append(message)
            if len(unacked) >= ack_every:
                last = unacked[-1]
                unacked.clear()
                await last.ack(multiple=True)

        tag = await queue.consume(handle)
        try:
            await stop.wait()
        finally:
            await queue.cancel(tag)
            if unacked:
                await unacked[-1].ack(multiple=True)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.flush()
        await self._connection.close()


class RabbitDriver:
    """Drives a RabbitMQ cluster given its nodes' AMQP URLs."""

    broker = "RabbitMQ"
    client = f"aio-pika {aio_pika.__version__} (aiormq, asyncio), one channel with publisher confirms"

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls

    async def _open(self, home: int) -> tuple[AbstractConnection, AbstractChannel]:
        connection = await aio_pika.connect(self.urls[home % len(self.urls)])
        return connection, await connection.channel(publisher_confirms=True)

    async def declare(self, queue: str, home: int = 0) -> None:
        connection, channel = await self._open(home)
        try:
            await channel.queue_delete(queue)
            await channel.declare_queue(queue, durable=True, arguments=QUORUM)
        finally:
            await connection.close()

    async def delete(self, queue: str) -> None:
        connection, channel = await self._open(0)
        try:
            await channel.queue_delete(queue)
        finally:
            await connection.close()

    async def connect(
        self, queue: str, home: int = 0, *, in_flight: int = 1000, direct: bool = False
    ) -> RabbitConnection:
        connection, channel = await self._open(home)
        return RabbitConnection(connection, channel, queue)

    async def queue_length(self, queue: str, home: int = 0) -> int:
        connection, channel = await self._open(home)
        try:
            declared = await channel.declare_queue(queue, durable=True, arguments=QUORUM, passive=True)
            return int(declared.declaration_result.message_count or 0)
        finally:
            await connection.close()
