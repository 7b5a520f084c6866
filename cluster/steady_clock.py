"""The wall clock for expiry times that other nodes check (node assertions, bearer tokens).

It runs at the monotonic clock's rate from the wall clock read at start, so a step of the system clock
(the clock nemesis, an operator's mistake set right) does not move it at once: a node whose clock jumps
neither signs assertions its peers refuse nor refuses theirs. A step that holds for STEP_HOLD_MS is taken
for the truth (a clock set right after the node started: a service started before NTP synced, a VM
resumed from suspend, during which the monotonic clock stood) and followed: at once when the wall clock
is ahead, at half rate when it is behind. So this clock never goes back (a nonce forgotten once its
assertion expired stays expired, `cluster/security/replay_guard.py`). Nodes must still run with clocks
within ASSERTION_TTL_MS of each other; see docs/decisions/0010-leader-clock.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

STEP_TOLERANCE_NS = 1_000_000_000
"""Wall and steady clocks this close agree (NTP slews both the wall and the monotonic clock alike)."""
STEP_HOLD_NS = 300_000_000_000
"""A wall clock off by more than the tolerance, by the same amount for this long, is followed: longer
than the clock nemesis holds a fault, short against how long a wrongly started clock stays wrong."""


class SteadyClock:
    """Milliseconds since the epoch: the monotonic clock plus an offset that follows the wall clock's
    only once a step held (`STEP_HOLD_NS`), never backwards."""

    def __init__(
        self, wall_ns: Callable[[], int] = time.time_ns, monotonic_ns: Callable[[], int] = time.monotonic_ns
    ) -> None:
        self._wall_ns = wall_ns
        self._monotonic_ns = monotonic_ns
        self._lock = threading.Lock()
        self._last_ns = monotonic_ns()
        self._offset_ns = wall_ns() - self._last_ns
        self._step: tuple[int, int] | None = None  # the wall clock's other offset, first seen at (monotonic)

    def now_ms(self) -> int:
        """The steady time now, in milliseconds since the epoch."""
        with self._lock:
            monotonic = self._monotonic_ns()
            self._follow(self._wall_ns() - monotonic, monotonic)
            return (monotonic + self._offset_ns) // 1_000_000

    def _follow(self, wall_offset: int, monotonic: int) -> None:
        """Move the offset towards `wall_offset` once it held: all at once forward, else by half the
        monotonic time since it held or since the last reading (this clock then runs at half rate until
        it meets the wall clock)."""
        last, self._last_ns = self._last_ns, monotonic
        if abs(wall_offset - self._offset_ns) <= STEP_TOLERANCE_NS:
            self._step = None
            return
        if self._step is None or abs(wall_offset - self._step[0]) > STEP_TOLERANCE_NS:
            self._step = (wall_offset, monotonic)  # a new step (or the wall clock moved again)
            return
        held_since = self._step[1] + STEP_HOLD_NS
        if monotonic < held_since:
            return
        if wall_offset > self._offset_ns:
            self._offset_ns = wall_offset
        else:
            self._offset_ns = max(wall_offset, self._offset_ns - (monotonic - max(last, held_since)) // 2)


_CLOCK = SteadyClock()


def steady_wall_ms() -> int:
    """This process's steady time (`SteadyClock`), in milliseconds since the epoch."""
    return _CLOCK.now_ms()
