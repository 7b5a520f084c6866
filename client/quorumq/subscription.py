"""Subscription: a consumer to iterate over, its deliveries pushed on a node's stream (quorumq.stream)
or long-polled over HTTP from a node that offers no stream."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from quorumq.errors import ConsumerEndedError, NotFoundError
from quorumq.incoming import IncomingMessage
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
    time. A consumer the server ended (it held a delivery past its consumer timeout untouched, or it was
    not heard from for the idle timeout) is replaced by a new one the same way; what it held went back to
    the queue. Deliveries are touched while they wait to be iterated and while
    a `message.process()` block runs, so slow work keeps them (`quorumq.hold_keeper`).
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
        self._messages: Callable[..., IncomingMessage] | None = None  # the current consumer's

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
        """The deliveries one by one, each kept held (touched every half hold) from its arrival until the
        next one is asked for; `message.process()` keeps it until its block ends."""
        async for batch in self.batches():
            keeper = batch[0].settler.keeper
            keeper.keep(message.id for message in batch)
            handed = 0
            try:
                for message in batch:
                    yield message
                    keeper.let_go((message.id,))
                    handed += 1
            finally:
                keeper.let_go(message.id for message in batch[handed:])

    async def batches(self) -> AsyncIterator[list[IncomingMessage]]:
        """The deliveries as they arrive: one stream frame, or one poll, at a time (never empty), each
        settled and touched as the consumer that received it."""
        await self.start()
        while True:
            assert self._messages is not None
            if self._via is None:
                assert self.tag is not None
                try:
                    polled = await self._client._poll(self.queue, self.tag, self._prefetch, self._wait)
                except ConsumerEndedError:  # what it held went back to the queue: carry on anew
                    await self._register(None, None)
                    continue
                if polled:
                    yield decode_deliveries(polled, self._messages)
                continue
            item = await self._feed.next()
            if isinstance(item, _Ended):
                await self._carry_on(item)
            elif item:
                yield decode_deliveries(item, self._messages)

    async def ack(self, deliveries: Iterable[Delivery | int]) -> None:
        """Settle deliveries (Delivery objects or ids) of the current consumer (a message settles itself
        as the consumer that received it)."""
        await self._settle("ack", {"ids": _ids(deliveries)})

    async def nack(
        self,
        deliveries: Iterable[Delivery | int],
        requeue: bool = True,
        *,
        failed: bool = True,
        reason: str | None = None,
        delay_ms: int | None = None,
    ) -> None:
        """Return deliveries to the queue, or discard/dead-letter them when `requeue` is False (`failed`,
        `reason` and `delay_ms` as for `Client.nack`)."""
        await self._settle("nack", nack_body(_ids(deliveries), requeue, failed, reason, delay_ms))

    async def touch(self, deliveries: Iterable[Delivery | int]) -> int:
        """Extend the hold of deliveries of the current consumer (each counts from now as just handed
        out); returns how long they may now be held untouched, in ms. Iterating the subscription and
        `message.process()` do this by themselves."""
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
        self.tag, self._via, hold_ms = await self._client._subscribe(
            self.queue, self._prefetch, self._priority, self._feed, tag, via
        )
        self._messages = self._client._consumer_messages(self.queue, self.tag, self._via, hold_ms)

    async def _carry_on(self, ended: _Ended) -> None:
        """After the consumer stopped delivering on its stream: the same consumer on its queue's leader,
        or a new one when it is gone (NotFoundError when the queue is)."""
        try:
            await self._register(self.tag, ended.leader_http)
        except NotFoundError:
            await self._register(None, ended.leader_http)

    async def _settle(self, kind: str, body: dict[str, Any]) -> None:
        await self._client._settle_consumer(self.queue, await self.start(), kind, body, self._via)


def _ids(deliveries: Iterable[Delivery | int]) -> list[int]:
    return [item.id if isinstance(item, Delivery) else item for item in deliveries]
