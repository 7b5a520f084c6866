"""Declare many quorum queues, and put one confirmed message in each, through each broker's strongest
client with the same number of calls in flight: quorumq's Python client over its HTTP API, RabbitMQ's
Java client (bench/java/Bench.java). Queue i goes through node i mod 3, where both brokers place its
leader, so the leaders are spread evenly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from bench.java_runner import JavaRunner
from quorumq import Client

PREFIX = "idle-"
BODY = b"x" * 16
QUORUM = {"x-queue-type": "quorum"}
TIMEOUT_S = 600.0  # a declare waits for its queue's first election, slow on a saturated node


def queue_name(index: int) -> str:
    """The name of queue `index`."""
    return f"{PREFIX}{index}"


class ManyQueues(Protocol):
    """Queues idle-0..idle-(count-1) on one broker, made and filled as fast as its client can."""

    description: str

    async def declare(self, count: int) -> float:
        """Declare the queues as quorum queues (3 replicas); the seconds it took."""
        ...

    async def publish_each(self, count: int) -> float:
        """Publish one message to each queue, waiting for every confirm; the seconds it took."""
        ...


class QuorumqManyQueues:
    """`concurrency` requests in flight, each waiting for its answer; one Client per node."""

    def __init__(self, urls: list[str], concurrency: int) -> None:
        self.urls = urls
        self.concurrency = concurrency
        self.description = (
            f"quorumq.Client (HTTP API, asyncio), {concurrency} requests in flight, queue i through "
            "node i mod 3; a publish is one message, answered once a majority has it"
        )

    async def _each(self, count: int, call: Callable[[Client, str], Awaitable[Any]]) -> float:
        n = len(self.urls)
        clients = [Client([*self.urls[k:], *self.urls[:k]], timeout=TIMEOUT_S) for k in range(n)]
        indexes = iter(range(count))  # shared: each worker takes the next queue when it is free

        async def worker() -> None:
            for index in indexes:
                await call(clients[index % n], queue_name(index))

        try:
            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(self.concurrency)))
            return time.perf_counter() - started
        finally:
            await asyncio.gather(*(client.close() for client in clients))

    async def declare(self, count: int) -> float:
        return await self._each(count, lambda client, queue: client.declare(queue, QUORUM))

    async def publish_each(self, count: int) -> float:
        return await self._each(count, lambda client, queue: client.publish(queue, BODY))


class JavaManyQueues:
    """Bench.java's declare-many and publish-each modes: `concurrency` threads, each with a channel per
    node, each call waiting for its answer (queue.declare-ok, the publisher confirm)."""

    def __init__(self, runner: JavaRunner, concurrency: int) -> None:
        self.runner = runner
        self.concurrency = concurrency
        self.description = (
            f"{runner.description}; {concurrency} channels in flight, queue i through node i mod 3"
        )

    async def declare(self, count: int) -> float:
        return (await self.runner.declare_many(PREFIX, count, self.concurrency)).seconds

    async def publish_each(self, count: int) -> float:
        return (await self.runner.publish_each(PREFIX, count, self.concurrency, len(BODY))).seconds
