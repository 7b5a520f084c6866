"""Subscription: a consumer to iterate over, its deliveries pushed on a node's stream (quorumq.stream)
or long-polled over HTTP from a node that offers no stream."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from quorumq.errors import ConsumerEndedError, NotFoundError
from quorumq.hold_keeper import HoldKeeper
from quorumq.incoming import IncomingMessage, settled_through
from quorumq.messages import Delivery, decode_deliveries, nack_body

if TYPE_CHECKING:
    from quorumq.client import Client


class _Ended(NamedTuple):
    """The consumer stopped delivering on its stream, for `reason`; `leader_http` leads its queue now."""

    reason: str
    leader_http: str | None


class _Feed:
    """What a stream hands a consumer, in arrival order: batches of deliveries, then maybe its end."""

    def __init__(self) -> None:
        self._items: asyncio.Queue[list[dict[str, Any]] | _Ended] = asyncio.Queue()

    def delivered(self, messages: list[dict[str, Any]]) -> None:
        self._items.put_nowait(messages)

    def ended(self, reason: str, leader_http: str | None) -> None:
        self._items.put_nowait(_Ended(reason, leader_http))

    async def next(self) -> list[dict[str, Any]] | _Ended:
        return await self._items.get()


class Subscription:
    """A consumer of `queue` whose deliveries are yielded by `async for` (one by one) or `batches()`; the
    caller settles them, each through the subscription (`ack`/`nack`) or by itself (`async with
    message.process(): ...`).

    The consumer is registered on first use (`async with` or iteration) and cancelled by `close()` or
    on leaving `async with` (its unacked messages then return to the queue). On a stream it lives on
    its queue's leader, which pushes up to `prefetch` unacked deliveries; when the leader changes or the
    connection drops, the subscription carries on with the same consumer on the new leader (what it held
    and did not ack is delivered again), or with a new one when the old one is gone. Over HTTP
    (`Client(..., stream=False)`, or a node without streams) it long-polls for up to `wait` seconds at a
    time. A consumer the server ended (it held a delivery past its consumer timeout untouched, or left
    deliveries waiting while it was silent for the idle timeout) is replaced by a new one the same way;
    what it held went back to the queue. Messages inside `message.process()` are touched while the
    block runs, so slow work keeps them.
    """

    def __init__(self, client: "Client", queue: str, *, prefetch: int, priority: int, wait: float) -> None:
        self._client = client
        self.queue = queue
        self._prefetch = prefetch
        self._priority = priority
        self._wait = wait
        self.tag: str | None = None
        self._feed = _Feed()
        self._via: str | None = None  # the node whose stream delivers to this consumer
        self._keeper = HoldKeeper(self.touch)

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
            await self._register(None, None)
        assert self.tag is not None
        return self.tag

    async def __aiter__(self) -> AsyncIterator[IncomingMessage]:
        async for batch in self.batches():
            for message in batch:
                yield message

    async def batches(self) -> AsyncIterator[list[IncomingMessage]]:
        """The deliveries as they arrive: one stream frame, or one poll, at a time (never empty)."""
        await self.start()
        while True:
            if self._via is None:
                assert self.tag is not None
                try:
                    polled = await self._client.deliveries(
                        self.queue, self.tag, max=self._prefetch, wait=self._wait
                    )
                except ConsumerEndedError:  # what it held went back to the queue: carry on anew
                    await self._register(None, None)
                    continue
                if polled:
                    yield polled
                continue
            item = await self._feed.next()
            if isinstance(item, _Ended):
                await self._carry_on(item)
            elif item:
                yield decode_deliveries(item, self._settled_here())

    async def ack(self, deliveries: Iterable[Delivery | int]) -> None:
        """Settle deliveries (Delivery objects or ids)."""
        await self._settle("ack", {"ids": _ids(deliveries)})

    async def nack(
        self,
        deliveries: Iterable[Delivery | int],
        requeue: bool = True,
        *,
        failed: bool = True,
        reason: str | None = None,
    ) -> None:
        """Return deliveries to the queue, or discard/dead-letter them when `requeue` is False (`failed`
        and `reason` as for `Client.nack`)."""
        await self._settle("nack", nack_body(_ids(deliveries), requeue, failed, reason))

    async def touch(self, deliveries: Iterable[Delivery | int]) -> int:
        """Extend the hold of deliveries (each counts from now as just handed out); returns how long they
        may now be held untouched, in ms. `message.process()` does this by itself while its block runs."""
        return await self._client._touch_consumer(self.queue, await self.start(), _ids(deliveries), self._via)

    async def close(self) -> None:
        """Cancel the consumer if it was registered (a consumer the server already dropped is fine)."""
        if self.tag is not None:
            tag, self.tag = self.tag, None
            with contextlib.suppress(NotFoundError):
                await self._client._cancel(self.queue, tag, self._via)

    async def _register(self, tag: str | None, via: str | None) -> None:
        """Register a consumer (or carry on with `tag`), first through the node `via` when given."""
        self._feed = _Feed()  # what the previous stream still delivers to the old feed is dropped
        self.tag, self._via, self._keeper.hold_ms = await self._client._subscribe(
            self.queue, self._prefetch, self._priority, self._feed, tag, via
        )

    async def _carry_on(self, ended: _Ended) -> None:
        """After the consumer stopped delivering on its stream: the same consumer on its queue's leader,
        or a new one when it is gone (NotFoundError when the queue is)."""
        try:
            await self._register(self.tag, ended.leader_http)
        except NotFoundError:
            await self._register(None, ended.leader_http)

    def _settled_here(self) -> Callable[..., IncomingMessage]:
        """What makes IncomingMessages that settle through this subscription (its consumer's stream)."""
        return settled_through(self.ack, self.nack, self._keeper)

    async def _settle(self, kind: str, body: dict[str, Any]) -> None:
        await self._client._settle_consumer(self.queue, await self.start(), kind, body, self._via)


def _ids(deliveries: Iterable[Delivery | int]) -> list[int]:
    return [item.id if isinstance(item, Delivery) else item for item in deliveries]
