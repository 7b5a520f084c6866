"""Client-side helpers of the Docker tests: a confirmed-publish stream and draining a queue."""

from __future__ import annotations

import asyncio
import itertools

from support.eventually import eventually

from quorumq import Client, QuorumqError


class ConfirmedStream:
    """Publishers sending numbered messages in batches; `confirmed` holds every number a 201 confirmed."""

    def __init__(self, client: Client, queue: str, publishers: int = 4, batch: int = 10) -> None:
        self.confirmed: set[int] = set()
        self._client, self._queue, self._batch = client, queue, batch
        self._numbers = itertools.count()
        self._stop = asyncio.Event()
        self._tasks = [asyncio.create_task(self._publish()) for _ in range(publishers)]

    async def _publish(self) -> None:
        while not self._stop.is_set():
            values = [next(self._numbers) for _ in range(self._batch)]
            try:
                await self._client.publish(self._queue, [str(v) for v in values])
            except QuorumqError:
                continue
            self.confirmed.update(values)

    async def until_confirmed(self, count: int, timeout: float) -> None:
        """Wait until at least `count` messages are confirmed."""
        await eventually(
            lambda: len(self.confirmed) >= count, f"{count} confirmed publishes", timeout=timeout
        )

    async def stop(self) -> set[int]:
        """Stop publishing; returns the confirmed numbers."""
        self._stop.set()
        await asyncio.gather(*self._tasks)
        return self.confirmed


async def take_all(client: Client, queue: str) -> list[str]:
    """Get (auto-ack) every ready message of `queue` in order, as text."""
    bodies: list[str] = []
    while batch := await client.get(queue, count=500, ack="auto"):
        bodies.extend(delivery.body.decode() for delivery in batch)
    return bodies
