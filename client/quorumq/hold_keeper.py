"""HoldKeeper: keeps the messages a handler is working on held, touching them before their hold runs out.

A delivery may be held for `hold_ms` without an ack, nack or touch (the consumer timeout in force for its
consumer, or the queue's lease period when shorter); past that the server takes it back. While messages
are inside `async with message.process()`, their keeper touches all of them in one request every half
hold, so a slow handler keeps what it works on (JetStream's in-progress ack, SQS's visibility change).
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from quorumq.errors import QuorumqError

log = logging.getLogger(__name__)

UNKNOWN_HOLD_FIRST_TOUCH_S = 1.0
"""When the hold is not known yet (a manual-ack get), the first touch goes this long into the work; its
answer tells the hold."""


class HoldKeeper:
    """The messages of one consumer (or one get) being worked on, touched through `touch(ids)`, which
    answers the hold in ms."""

    def __init__(self, touch: Callable[[list[int]], Awaitable[int]], hold_ms: int | None = None) -> None:
        self._touch = touch
        self.hold_ms = hold_ms
        self._ids: set[int] = set()
        self._task: asyncio.Task[None] | None = None

    async def touch(self, ids: list[int]) -> int:
        """Touch `ids` now; returns (and remembers) the hold in ms."""
        self.hold_ms = await self._touch(ids)
        return self.hold_ms

    @contextlib.asynccontextmanager
    async def holding(self, message_id: int) -> AsyncIterator[None]:
        """Keep `message_id` held while the block runs."""
        self._ids.add(message_id)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._keep())
        try:
            yield
        finally:
            self._ids.discard(message_id)
            if not self._ids and self._task is not None:
                self._task.cancel()
                self._task = None

    def _interval_s(self) -> float:
        return UNKNOWN_HOLD_FIRST_TOUCH_S if self.hold_ms is None else self.hold_ms / 2000

    async def _keep(self) -> None:
        """Touch what is held every half hold until nothing is, or the server refuses touches (a 4xx: the
        consumer ended, or the cluster reads no touches yet; the work goes on, and its settle will tell).
        A touch that got no answer is tried again next round."""
        while self._ids:
            await asyncio.sleep(self._interval_s())
            try:
                await self.touch(sorted(self._ids))
            except QuorumqError as exc:
                held = len(self._ids)
                if 400 <= exc.status < 500:
                    log.warning("touching %d held message(s) refused, no longer touching: %s", held, exc)
                    return
                log.warning("touching %d held message(s) failed, trying next round: %s", held, exc)
