"""Publisher deduplication: per publisher, a contiguous watermark and a bounded window of seen seqs.

rabbit_fifo takes `seq == next` and calls `seq < next` a duplicate. Our publishers pipeline concurrent
HTTP requests, so seqs may arrive out of order. Each publisher keeps:

- the **window**: the `WINDOW_SIZE` highest seqs taken, each with its first id and message count; a
  seq in it is a duplicate answered with its ids;
- the **watermark**: every seq from 1 up to it was taken (seqs count from 1, as the client's and
  AMQP's confirms do), so such a seq is a duplicate even once its ids have left the window;
- the **floor**: one above the highest seq ever evicted from the window. A seq below it, not in the
  window and above the watermark, may never have been taken (a request delayed past the window) or
  was taken and trimmed: its status is unknown, so it is refused as `seq_too_old`, never enqueued.

Publishers idle for `IDLE_MS` are forgotten on `Tick`.
"""

from __future__ import annotations

import heapq
from typing import Any

from queue_state.effects import Duplicate, Failure, answered_ids

WINDOW_SIZE = 1024
IDLE_MS = 60 * 60 * 1000
SEQ_TOO_OLD = "seq_too_old"


Refused = tuple[tuple[int, int], ...]
"""The messages of a publish a deduplication window refused: (position, the id answered for it)."""


class PublisherWindow:
    """One publisher's watermark, floor and recent seqs (each mapped to (first id, message count)), and of
    those, the messages a deduplication window refused (`refused`: answered with another id)."""

    __slots__ = ("_order", "floor", "last_seen_ms", "refused", "seen", "watermark")

    def __init__(
        self,
        watermark: int,
        floor: int,
        last_seen_ms: int,
        seen: dict[int, tuple[int, int]],
        refused: dict[int, Refused] | None = None,
    ) -> None:
        self.watermark = watermark
        self.floor = floor
        self.last_seen_ms = last_seen_ms
        self.seen = seen
        self.refused = refused or {}
        self._order = list(seen)
        heapq.heapify(self._order)
        self._raise_watermark()

    def answer_if_not_new(self, seq: int) -> Duplicate | Failure | None:
        """The answer to a seq that must not be enqueued (a duplicate, or too old to tell); None if new.
        A duplicate is answered as the first publish was, each refused message with the id it was given."""
        first_and_count = self.seen.get(seq)
        if first_and_count is not None:
            first_id, count = first_and_count
            refused = self.refused.get(seq, ())
            return Duplicate(answered_ids(tuple(range(first_id, first_id + count)), refused), refused)
        if seq >= self.floor:
            return None
        if 0 < seq <= self.watermark:
            return Duplicate(None)
        return Failure(
            SEQ_TOO_OLD,
            f"seq {seq} is below this publisher's dedup window (seqs from {self.floor}) and not in an"
            " unbroken run of seqs from 1, so whether it was ever enqueued is unknown; it was not"
            " enqueued now (publish it again with a new seq)",
        )

    def record(self, seq: int, first_id: int, count: int, refused: Refused = ()) -> None:
        self.seen[seq] = (first_id, count)
        if refused:
            self.refused[seq] = refused
        heapq.heappush(self._order, seq)
        self._raise_watermark()
        while len(self.seen) > WINDOW_SIZE:
            evicted = heapq.heappop(self._order)
            del self.seen[evicted]
            self.refused.pop(evicted, None)
            self.floor = max(self.floor, evicted + 1)

    def _raise_watermark(self) -> None:
        while self.watermark + 1 in self.seen:
            self.watermark += 1


class PublisherDedup:
    """Every publisher's window, ordered by last activity so the idlest is first."""

    __slots__ = ("_windows",)

    def __init__(self) -> None:
        self._windows: dict[str, PublisherWindow] = {}

    def __len__(self) -> int:
        return len(self._windows)

    def answer_if_not_new(self, publisher: str, seq: int) -> Duplicate | Failure | None:
        """The answer to a (publisher, seq) that must not be enqueued; None if it is new."""
        window = self._windows.get(publisher)
        return None if window is None else window.answer_if_not_new(seq)

    def touch(self, publisher: str, now_ms: int) -> PublisherWindow:
        """Mark the publisher active now (moving it to the end of the idle order) and return its window."""
        window = self._windows.pop(publisher, None) or PublisherWindow(0, 0, now_ms, {})
        window.last_seen_ms = now_ms
        self._windows[publisher] = window
        return window

    def forget_idle(self, now_ms: int) -> None:
        while self._windows:
            publisher, window = next(iter(self._windows.items()))
            if window.last_seen_ms + IDLE_MS > now_ms:
                return
            del self._windows[publisher]

    def next_forget_ms(self) -> int | None:
        oldest = next(iter(self._windows.values()), None)
        return None if oldest is None else oldest.last_seen_ms + IDLE_MS

    def to_wire(self) -> list[Any]:
        """Rows `[publisher, watermark, floor, last_seen_ms, [[seq, first_id, count], ...]]`; a seq whose
        messages a deduplication window refused has `[[position, answered id], ...]` fourth (snapshot
        version 11)."""
        return [
            [publisher, w.watermark, w.floor, w.last_seen_ms, [_seen_row(w, s, v) for s, v in w.seen.items()]]
            for publisher, w in self._windows.items()
        ]

    def extend_from_wire(self, publishers: list[Any]) -> None:
        """Add `to_wire` rows."""
        for publisher, watermark, floor, last_seen_ms, seen in publishers:
            refused = {row[0]: tuple((p, a) for p, a in row[3]) for row in seen if len(row) > 3}
            self._windows[publisher] = PublisherWindow(
                watermark, floor, last_seen_ms, {row[0]: (row[1], row[2]) for row in seen}, refused
            )


def _seen_row(window: PublisherWindow, seq: int, first_and_count: tuple[int, int]) -> list[Any]:
    refused = window.refused.get(seq)
    row: list[Any] = [seq, *first_and_count]
    if refused:
        row.append([list(pair) for pair in refused])
    return row
