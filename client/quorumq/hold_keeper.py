"""HoldKeeper: keeps deliveries held while they wait to be worked on or are worked on, touching them
before their hold runs out.

A delivery may be held for `hold_ms` without an ack, nack or touch (the consumer timeout in force for its
consumer, or the queue's lease period when shorter); past that the server takes it back. A keeper
touches everything it keeps in one request every half hold, so a slow handler keeps what it works on
and what waits behind it (JetStream's in-progress ack, SQS's visibility change).
"""

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

from quorumq.errors import QuorumqError

log = logging.getLogger(__name__)

UNKNOWN_HOLD_FIRST_TOUCH_S = 1.0
"""When the hold is not known yet (a manual-ack get), the first touch goes this long into the work; its
answer tells the hold."""
SHORTEST_TOUCH_INTERVAL_S = 0.05


class HoldKeeper:
    """The deliveries of one consumer (or one get) being kept, touched through `touch(ids)`, which answers
    the hold in ms."""

    def __init__(self, touch: Callable[[list[int]], Awaitable[int]], hold_ms: int | None = None) -> None:
        self._touch = touch
        self.hold_ms = hold_ms
        self._kept: Counter[int] = Counter()
        self._task: asyncio.Task[None] | None = None

    async def touch(self, ids: list[int]) -> int:
        """Touch `ids` now; returns (and remembers) the hold in ms."""
        self.hold_ms = await self._touch(ids)
        return self.hold_ms

    def keep(self, ids: Iterable[int]) -> None:
        """Keep `ids` held until each is let go as many times (`let_go`)."""
        self._kept.update(ids)
        if self._kept and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._keep())

    def let_go(self, ids: Iterable[int]) -> None:
        """Stop keeping `ids` (once each); the touching stops when nothing is kept."""
        self._kept.subtract(ids)
        self._kept = +self._kept  # drops the ids kept no more
        if not self._kept and self._task is not None:
            self._task.cancel()
            self._task = None

    @contextlib.asynccontextmanager
    async def holding(self, message_id: int) -> AsyncIterator[None]:
        """Keep `message_id` held while the block runs."""
        self.keep((message_id,))
        try:
            yield
        finally:
            self.let_go((message_id,))

    def _interval_s(self) -> float:
        if self.hold_ms is None:
            return UNKNOWN_HOLD_FIRST_TOUCH_S
        return max(self.hold_ms / 2000, SHORTEST_TOUCH_INTERVAL_S)

    async def _keep(self) -> None:
        """Touch what is kept every half hold until nothing is, or the server refuses touches (a 4xx: the
        consumer ended, or the cluster reads no touches yet; the work goes on, and its settle will tell).
        A touch that got no answer is tried again next round."""
        while self._kept:
            await asyncio.sleep(self._interval_s())
            kept = sorted(self._kept)
            try:
                await self.touch(kept)
            except QuorumqError as exc:
                if 400 <= exc.status < 500:
                    log.warning("touching %d held message(s) refused, no longer touching: %s", len(kept), exc)
                    return
                log.warning("touching %d held message(s) failed, trying next round: %s", len(kept), exc)
            except Exception:
                log.exception("touching %d held message(s) failed, no longer touching", len(kept))
                return
