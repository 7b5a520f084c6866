"""Publisher deduplication: a bounded window of seen sequence numbers per publisher.

rabbit_fifo takes `seq == next` and calls `seq < next` a duplicate. Our publishers pipeline concurrent
HTTP requests, so seqs may arrive out of order: we remember each seen seq (its first id and message
count) in a window of `WINDOW_SIZE` seqs. A seen seq is answered with its ids; a seq below the window's
floor (the smallest seq ever evicted, plus one) is a duplicate whose ids are forgotten. Publishers idle
for `IDLE_MS` are forgotten on `Tick`.
"""

from __future__ import annotations

import heapq
from typing import Any

from queue_state.effects import Duplicate

WINDOW_SIZE = 1024
IDLE_MS = 60 * 60 * 1000


class PublisherWindow:
    """The seqs one publisher used recently, each mapped to (first id, message count)."""

    __slots__ = ("_order", "floor", "last_seen_ms", "seen")

    def __init__(self, floor: int, last_seen_ms: int, seen: dict[int, tuple[int, int]]) -> None:
        self.floor = floor
        self.last_seen_ms = last_seen_ms
        self.seen = seen
        self._order = list(seen)
        heapq.heapify(self._order)

    def record(self, seq: int, first_id: int, count: int) -> None:
        self.seen[seq] = (first_id, count)
        heapq.heappush(self._order, seq)
        while len(self.seen) > WINDOW_SIZE:
            evicted = heapq.heappop(self._order)
            del self.seen[evicted]
            self.floor = max(self.floor, evicted + 1)


class PublisherDedup:
    """Every publisher's window, ordered by last activity so the idlest is first."""

    __slots__ = ("_windows",)

    def __init__(self) -> None:
        self._windows: dict[str, PublisherWindow] = {}

    def __len__(self) -> int:
        return len(self._windows)

    def duplicate_of(self, publisher: str, seq: int) -> Duplicate | None:
        """The answer to a seq seen before (with its ids, or None below the window); None if it is new."""
        window = self._windows.get(publisher)
        if window is None:
            return None
        first_and_count = window.seen.get(seq)
        if first_and_count is not None:
            first_id, count = first_and_count
            return Duplicate(tuple(range(first_id, first_id + count)))
        return Duplicate(None) if seq < window.floor else None

    def touch(self, publisher: str, now_ms: int) -> PublisherWindow:
        """Mark the publisher active now (moving it to the end of the idle order) and return its window."""
        window = self._windows.pop(publisher, None) or PublisherWindow(0, now_ms, {})
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
        return [
            [publisher, window.floor, window.last_seen_ms, [[s, *v] for s, v in window.seen.items()]]
            for publisher, window in self._windows.items()
        ]

    def extend_from_wire(self, publishers: list[Any]) -> None:
        for publisher, floor, last_seen_ms, seen in publishers:
            self._windows[publisher] = PublisherWindow(
                floor, last_seen_ms, {seq: (first_id, count) for seq, first_id, count in seen}
            )
