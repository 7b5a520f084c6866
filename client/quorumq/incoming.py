"""IncomingMessage: a delivered message that settles itself, and `process()` around the work on it."""

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Self

from quorumq.errors import ConflictError, QuorumqError
from quorumq.hold_keeper import HoldKeeper
from quorumq.messages import Delivery


class Settler(NamedTuple):
    """How the messages of one consumer (or of one `get`) are settled: `ack(ids)`, `nack(ids, requeue,
    failed=..., reason=...)`, and kept held while worked on (`keeper`)."""

    ack: Callable[[list[int]], Awaitable[object]]
    nack: Callable[..., Awaitable[object]]
    keeper: HoldKeeper


class _Settlement:
    """Whether one message has been settled (the only part of a message that changes)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False


@dataclass(frozen=True, kw_only=True)
class IncomingMessage(Delivery):
    """A Delivery that can settle itself, once: `await message.ack()`, `await message.nack(requeue=...)`,
    or `async with message.process(): ...` around the work on it (as aio-pika's `message.process()`).

    A consumer's deliveries (`subscribe`, `deliveries`) and the messages of a manual-ack `get` are
    IncomingMessages; it is a Delivery in every other way."""

    settler: Settler = field(repr=False, compare=False)
    _settlement: _Settlement = field(default_factory=_Settlement, init=False, repr=False, compare=False)

    @property
    def settled(self) -> bool:
        """True once this message was acked or nacked through it."""
        return self._settlement.done

    async def ack(self) -> None:
        """Settle the message as handled."""
        self._refuse_if_settled()
        await self.settler.ack([self.id])
        self._settlement.done = True

    async def nack(
        self,
        requeue: bool = True,
        *,
        failed: bool = True,
        reason: str | None = None,
        delay_ms: int | None = None,
    ) -> None:
        """Return the message to its queue, or, with `requeue=False`, dead-letter (or drop) it.

        A return counts as a failed delivery (toward the queue's delivery limit) unless `failed=False`,
        and waits `delay_ms` before it is ready again when given; a dead-lettered message keeps `reason`
        in its `x-death` (`reason-text`)."""
        self._refuse_if_settled()
        await self.settler.nack([self.id], requeue, failed=failed, reason=reason, delay_ms=delay_ms)
        self._settlement.done = True

    async def touch(self) -> int:
        """Extend the message's hold: it counts from now as just handed out (for the consumer timeout and
        the lease). Returns how long it may now be held without another touch, in ms."""
        self._refuse_if_settled()
        return await self.settler.keeper.touch([self.id])

    @contextlib.asynccontextmanager
    async def process(self, requeue: bool = True) -> AsyncIterator[Self]:
        """Ack the message when the block ends; when it raises, nack it (`requeue`: back to the queue,
        else dead-lettered) and re-raise. While the block runs the message is touched every half hold
        (`HoldKeeper`), so slow work keeps it. A block stopped by cancellation, KeyboardInterrupt or
        SystemExit (a worker shutting down) did not reject the message: it is requeued whatever
        `requeue` says, as a plain return (not counted toward the delivery limit, unless a node of the
        cluster reads no plain returns yet). A message the block settled itself is left as it is; when
        the nack itself fails, the block's exception is still the one raised, with a note saying so."""
        try:
            async with self.settler.keeper.holding(self.id):
                yield self
        except Exception as exc:
            await self._nack_after(exc, requeue)
            raise
        except BaseException as exc:
            await self._nack_after(exc, requeue=True, failed=False)
            raise
        if not self.settled:
            await self.ack()

    async def _nack_after(self, exc: BaseException, requeue: bool, failed: bool = True) -> None:
        """Nack the message (unless already settled) after the block raised `exc`; a plain return
        (`failed` false) that the cluster refuses for now is sent as a failed one."""
        if self.settled:
            return
        try:
            try:
                await self.nack(requeue=requeue, failed=failed)
            except ConflictError as refused:
                if failed or refused.code != "upgrade_in_progress":
                    raise
                await self.nack(requeue=requeue)
        except QuorumqError as failure:
            exc.add_note(f"and nacking message {self.id} failed: {failure}")

    def _refuse_if_settled(self) -> None:
        if self._settlement.done:
            raise RuntimeError(f"message {self.id} is already settled")


def settled_through(
    ack: Callable[[list[int]], Awaitable[object]], nack: Callable[..., Awaitable[object]], keeper: HoldKeeper
) -> Callable[..., IncomingMessage]:
    """What builds the IncomingMessages of one consumer (or one get) from a delivery's fields, each
    settled through `ack(ids)` and `nack(ids, requeue)`, and kept held by `keeper`."""
    return functools.partial(IncomingMessage, settler=Settler(ack, nack, keeper))
