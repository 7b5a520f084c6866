"""A queue's deduplication window by message id (`x-dedupe-window`, queue operations version 11): JetStream's
duplicate window and `Nats-Msg-Id`, SQS FIFO's deduplication id.

A message published with a message id the queue took within the last `x-dedupe-window` ms is a duplicate:
it is not enqueued, and its publish is answered with the id the queue gave the first one. The window keeps
each message id with that first id and the queue's time it was taken, oldest first. An id leaves once the
window passed over it, or earlier when the window holds `x-dedupe-max` ids and a new one comes (counted in
`evicted`: a resend of that id after then is enqueued again). A queue whose window is removed forgets
every id. Duplicates refused are counted in `refused`. Time is the queue's, the greatest its entries
carried: nothing here reads a clock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_DEDUPE_MAX = 100_000
"""The most message ids a window holds when the queue sets no `x-dedupe-max`."""
MAX_DEDUPE_ID_CHARS = 256
"""The longest message id a publish may carry (AMQP's short string)."""


class DedupeWindow:
    """The message ids a queue took within its window, each with the queue's first id for it and when."""

    __slots__ = ("_taken", "evicted", "refused")

    def __init__(self) -> None:
        self._taken: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self.evicted = 0
        self.refused = 0

    def __len__(self) -> int:
        return len(self._taken)

    def first_id(self, message_id: str) -> int | None:
        """The queue's id for the message first published with `message_id`, while the window holds it."""
        taken = self._taken.get(message_id)
        return None if taken is None else taken[0]

    def pass_time(self, now_ms: int, window_ms: int | None) -> None:
        """Let the window pass over every id taken `window_ms` or longer before `now_ms` (all of them
        when the queue has no window any more)."""
        if window_ms is None:
            self._taken.clear()
            return
        while self._taken:
            at_ms = next(iter(self._taken.values()))[1]
            if at_ms + window_ms > now_ms:
                return
            self._taken.popitem(last=False)

    def duplicates(self, message_ids: Sequence[str | None], first_id: int) -> dict[int, int]:
        """Of a batch whose messages get ids from `first_id` on, with these message ids (None: none), the
        position of each duplicate with the id its message id first got, within the window or earlier in
        the batch."""
        found: dict[int, int] = {}
        in_batch: dict[str, int] = {}
        for position, message_id in enumerate(message_ids):
            if message_id is None:
                continue
            earlier = self.first_id(message_id)
            if earlier is None:
                earlier = in_batch.get(message_id)
            if earlier is None:
                in_batch[message_id] = first_id + position
            else:
                found[position] = earlier
        return found

    def take(
        self,
        message_ids: Sequence[str | None],
        first_id: int,
        duplicates: Mapping[int, int],
        now_ms: int,
        most: int,
    ) -> None:
        """Record the message ids of a batch taken now, its messages ids from `first_id` on, but those at
        the positions of `duplicates` (counted as `refused`); evict the oldest ids beyond `most`."""
        self.refused += len(duplicates)
        for position, message_id in enumerate(message_ids):
            if message_id is not None and position not in duplicates:
                self._taken[message_id] = (first_id + position, now_ms)
        while len(self._taken) > most:
            self._taken.popitem(last=False)
            self.evicted += 1

    def to_wire(self) -> list[Any]:
        """`[evicted, refused, [[message_id, first_id, at_ms], ...]]`, oldest first."""
        return [
            self.evicted,
            self.refused,
            [[message_id, *taken] for message_id, taken in self._taken.items()],
        ]

    @classmethod
    def of_wire(cls, wire: list[Any]) -> DedupeWindow:
        """The window `to_wire` wrote."""
        evicted, refused, rows = wire
        window = cls()
        window.evicted, window.refused = evicted, refused
        for message_id, first_id, at_ms in rows:
            window._taken[message_id] = (first_id, at_ms)
        return window
