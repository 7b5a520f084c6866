"""Subscription: a consumer to iterate over, long-polling its deliveries."""

import contextlib
from collections.abc import AsyncIterator, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Self

from quorumq.errors import NotFoundError
from quorumq.incoming import IncomingMessage
from quorumq.messages import Delivery

if TYPE_CHECKING:
    from quorumq.client import Client


class Subscription:
    """A consumer of `queue` whose deliveries are yielded by `async for`; the caller settles them, each
    through the subscription (`ack`/`nack`) or by itself (`async with message.process(): ...`).

    The consumer is registered on first use (`async with` or iteration) and cancelled by `close()` or
    on leaving `async with` (its unacked messages then return to the queue); a subscription that is only
    iterated is cancelled by the server once it stops polling for the consumer timeout.
    """

    def __init__(self, client: "Client", queue: str, *, prefetch: int, priority: int, wait: float) -> None:
        self._client = client
        self.queue = queue
        self._prefetch = prefetch
        self._priority = priority
        self._wait = wait
        self.tag: str | None = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> str:
        """Register the consumer (once) and return its tag."""
        if self.tag is None:
            self.tag = await self._client.consume(
                self.queue, prefetch=self._prefetch, priority=self._priority
            )
        return self.tag

    async def __aiter__(self) -> AsyncIterator[IncomingMessage]:
        tag = await self.start()
        while True:
            for delivery in await self._client.deliveries(
                self.queue, tag, max=self._prefetch, wait=self._wait
            ):
                yield delivery

    async def ack(self, deliveries: Iterable[Delivery | int]) -> None:
        """Settle deliveries (Delivery objects or ids)."""
        await self._client.ack(self.queue, await self.start(), _ids(deliveries))

    async def nack(self, deliveries: Iterable[Delivery | int], requeue: bool = True) -> None:
        """Return deliveries to the queue, or discard/dead-letter them when `requeue` is False."""
        await self._client.nack(self.queue, await self.start(), _ids(deliveries), requeue=requeue)

    async def close(self) -> None:
        """Cancel the consumer if it was registered (a consumer the server already dropped is fine)."""
        if self.tag is not None:
            tag, self.tag = self.tag, None
            with contextlib.suppress(NotFoundError):
                await self._client.cancel(self.queue, tag)


def _ids(deliveries: Iterable[Delivery | int]) -> list[int]:
    return [item.id if isinstance(item, Delivery) else item for item in deliveries]
