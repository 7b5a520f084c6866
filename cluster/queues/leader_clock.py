"""The time a queue's leader stamps on commands: the wall clock, bounded by the monotonic clock.

Let L be the last stamp the queue has on this node (the greater of what this node stamped and what it
applied from the log) and e the monotonic time elapsed since this node stamped or applied it. The
next stamp is `clamp(wall, L + e/2, L + e)`:

- never backwards, and never faster than the monotonic clock, so a wall clock that jumps forward
  expires nothing early (queue time then runs at the monotonic rate until the wall clock is back);
- never frozen: a wall clock that jumps backward at worst halves the rate until queue time meets it;
- in steady state (wall clock and monotonic clock agree) the stamp is the wall clock.

Time counts only while some node runs the queue: after every replica was down, queue time lags the
wall clock by the outage and keeps that lag (TTLs count time the queue was up). Before any stamp is
known (a new queue) the wall clock is taken as it is. See docs/decisions/0010-leader-clock.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def monotonic_ms() -> float:
    """Milliseconds on this process's monotonic clock."""
    return time.monotonic_ns() / 1_000_000


class LeaderClock:
    """One queue's stamp source on one node."""

    def __init__(self, wall_ms: Callable[[], int], monotonic: Callable[[], float]) -> None:
        self._wall_ms = wall_ms
        self._monotonic = monotonic
        self._last: int | None = None
        self._since = 0.0  # monotonic time from which elapsed time still counts after `_last`

    @property
    def last_ms(self) -> int | None:
        """The last stamp known here (stamped or applied), None before any."""
        return self._last

    def observe(self, applied_ms: int) -> None:
        """A stamp applied from the log, perhaps another leader's: time here runs on from it."""
        if self._last is None or applied_ms > self._last:
            self._last = applied_ms
            self._since = self._monotonic()

    def stamp(self) -> int:
        """The stamp for the next command."""
        now = self._monotonic()
        wall = self._wall_ms()
        if self._last is None:
            self._last, self._since = wall, now
            return wall
        last, elapsed = self._last, max(0.0, now - self._since)
        low, high = last + int(elapsed / 2), last + int(elapsed)
        stamp = min(max(wall, low), high)
        if stamp > last:
            # Spend exactly the elapsed time the stamp used, so whole-millisecond steps lose no credit.
            if stamp == high:
                self._since += stamp - last
            elif stamp == low:
                self._since += 2 * (stamp - last)
            else:
                self._since = now
            self._last = stamp
        return stamp
