"""Declare many quorum queues, and put one confirmed message in each, through each broker's strongest
client with the same number of calls in flight: quorumq's Python client over its HTTP API, RabbitMQ's
Java client (bench/java/Bench.java). Queue i goes through node i mod 3, where both brokers place its
leader, so the leaders are spread evenly.

Each phase has a deadline: past it no new queue is taken, and the queues done by then are the ones the
benchmark goes on with (a cluster that cannot hold all of them is measured with what it could take).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bench.java_runner import JavaRunner
from quorumq import Client, QuorumqError

PREFIX = "idle-"
BODY = b"x" * 16
QUORUM = {"x-queue-type": "quorum"}
REQUEST_TIMEOUT_S = 120.0  # a declare waits for its queue's first election, slow on a saturated node


def queue_name(index: int) -> str:
    """The name of queue `index`."""
    return f"{PREFIX}{index}"


@dataclass(frozen=True)
class Done:
    """The queues a phase was done for (by index), the calls that failed, and the seconds it took."""

    indexes: list[int]
    errors: int
    seconds: float

    @property
    def rate(self) -> float:
        """Queues done per second."""
        return len(self.indexes) / self.seconds if self.seconds > 0 else 0.0


class ManyQueues(Protocol):
    """Queues idle-0..idle-(count-1) on one broker, made and filled as fast as its client can."""

    description: str

    async def declare(self, count: int, deadline: float) -> Done:
        """Declare queues 0..count-1 as quorum queues (3 replicas), taking none after `deadline` s."""
        ...

    async def publish_each(self, indexes: list[int], deadline: float) -> Done:
        """Publish one message to each of these queues, waiting for every confirm, likewise."""
        ...


class QuorumqManyQueues:
    """`concurrency` requests in flight, each waiting for its answer; one Client per node. A request that
    fails (after the client's retries, within REQUEST_TIMEOUT_S) counts as an error, not as done."""

    def __init__(self, urls: list[str], concurrency: int) -> None:
        self.urls = urls
        self.concurrency = concurrency
        self.description = (
            f"quorumq.Client (HTTP API, asyncio), {concurrency} requests in flight, queue i through "
            "node i mod 3; a publish is one message, answered once a majority has it"
        )

    async def _each(
        self, indexes: list[int], deadline: float, call: Callable[[Client, str], Awaitable[Any]]
    ) -> Done:
        n = len(self.urls)
        clients = [Client([*self.urls[k:], *self.urls[:k]], timeout=REQUEST_TIMEOUT_S) for k in range(n)]
        waiting = iter(indexes)  # shared: each worker takes the next queue when it is free
        done: list[int] = []
        errors = 0
        started = time.perf_counter()

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() - started < deadline and (index := next(waiting, None)) is not None:
                try:
                    await call(clients[index % n], queue_name(index))
                except QuorumqError:
                    errors += 1
                else:
                    done.append(index)

        try:
            await asyncio.gather(*(worker() for _ in range(self.concurrency)))
            return Done(sorted(done), errors, time.perf_counter() - started)
        finally:
            await asyncio.gather(*(client.close() for client in clients))

    async def declare(self, count: int, deadline: float) -> Done:
        return await self._each(
            list(range(count)), deadline, lambda client, queue: client.declare(queue, QUORUM)
        )

    async def publish_each(self, indexes: list[int], deadline: float) -> Done:
        return await self._each(indexes, deadline, lambda client, queue: client.publish(queue, BODY))


class JavaManyQueues:
    """Bench.java's declare-many and publish-each modes: `concurrency` threads, each with a channel per
    node, each call waiting for its answer (queue.declare-ok, the publisher confirm). A failed call
    fails the run; the queues done are always 0..K-1."""

    def __init__(self, runner: JavaRunner, concurrency: int) -> None:
        self.runner = runner
        self.concurrency = concurrency
        self.description = (
            f"{runner.library} (bench/java/Bench.java), one connection per node, {concurrency} threads "
            "each with a channel on each, queue i through node i mod 3; each publish waits for its confirm"
        )

    async def declare(self, count: int, deadline: float) -> Done:
        result = await self.runner.declare_many(PREFIX, count, self.concurrency, deadline)
        return Done(list(range(result.messages)), 0, result.seconds)

    async def publish_each(self, indexes: list[int], deadline: float) -> Done:
        if indexes != list(range(len(indexes))):
            raise ValueError("Bench.java publishes to queues 0..K-1 only")
        result = await self.runner.publish_each(PREFIX, len(indexes), self.concurrency, len(BODY), deadline)
        return Done(list(range(result.messages)), 0, result.seconds)
