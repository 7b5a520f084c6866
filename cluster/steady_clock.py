"""The wall clock for expiry times that other nodes check (node assertions, bearer tokens).

It runs at the monotonic clock's rate from the wall clock read at start, so a step of the system clock
(the clock nemesis, a mistake set right within the hold) does not move it at once: a node whose clock
jumps neither signs assertions its peers refuse nor refuses theirs. A step watched holding for
STEP_HOLD_NS is taken for the truth (a clock set right after the node started: a service started
before NTP synced, a VM resumed from suspend, during which the monotonic clock stood) and followed: at
once when the wall clock is ahead, at half rate when it is behind, so this clock never goes back (a
nonce forgotten once its assertion expired stays expired, `cluster/security/replay_guard.py`). A server
reads it every READ_EVERY_S (`watch`), so the hold counts from the step on every server of a host alike.
Nodes must run with clocks within ASSERTION_TTL_MS of each other; see docs/decisions/0010-leader-clock.md.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

STEP_TOLERANCE_NS = 1_000_000_000
"""Wall and steady clocks this close agree (NTP slews the wall and the monotonic clock alike)."""
STEP_HOLD_NS = 300_000_000_000
"""A wall clock off by more than the tolerance, by the same amount, watched for this long, is followed:
longer than the clock nemesis holds a fault, short against how long a wrongly started clock stays wrong.
Longer than an assertion lives, so that every assertion still valid once a step is followed was made
after the node started (the replay guard's `since_ms`)."""
READ_EVERY_S = 1.0
"""How often a server reads the clock (`watch`)."""
READ_GAP_NS = 10_000_000_000
"""A step counts as held only while readings come at most this far apart (an unwatched gap proves
nothing)."""


class SteadyClock:
    """Milliseconds since the epoch: the monotonic clock plus an offset, which moves to the wall clock's
    once a step held (`STEP_HOLD_NS`) so that the time it gives never goes back."""

    def __init__(
        self, wall_ns: Callable[[], int] = time.time_ns, monotonic_ns: Callable[[], int] = time.monotonic_ns
    ) -> None:
        self._wall_ns = wall_ns
        self._monotonic_ns = monotonic_ns
        self._lock = threading.Lock()
        self._last_ns = monotonic_ns()
        self._offset_ns = wall_ns() - self._last_ns
        self._step: tuple[int, int] | None = None  # the wall clock's other offset, watched since (monotonic)

    def now_ms(self) -> int:
        """The steady time now, in milliseconds since the epoch."""
        with self._lock:
            monotonic = self._monotonic_ns()
            followed = self._follow(self._wall_ns() - monotonic, monotonic)
            now_ms = (monotonic + self._offset_ns) // 1_000_000
        if followed is not None:  # logged outside the lock: a handler may read the clock
            log.warning(
                "the wall clock has read %+.3f s from this node's steady clock for %d s: following it%s",
                followed / 1e9,
                STEP_HOLD_NS // 1_000_000_000,
                "" if followed > 0 else " at half rate",
            )
        return now_ms

    def _follow(self, wall_offset: int, monotonic: int) -> int | None:
        """Move the offset towards `wall_offset` once it held: all at once forward, else by half the
        monotonic time since it held or since the last reading (the time given then runs at half rate
        until it meets the wall clock's). The step, when this reading is the first to follow it."""
        last, self._last_ns = self._last_ns, monotonic
        if abs(wall_offset - self._offset_ns) <= STEP_TOLERANCE_NS:
            self._step = None
            return None
        step = self._step
        if step is None or abs(wall_offset - step[0]) > STEP_TOLERANCE_NS:
            self._step = (wall_offset, monotonic)  # a new step (or the wall clock moved again)
            return None
        held_since = step[1] + STEP_HOLD_NS
        if last < held_since and monotonic - last > READ_GAP_NS:
            self._step = (wall_offset, monotonic)  # not watched through the hold: it starts again
            return None
        if monotonic < held_since:
            return None
        followed = wall_offset - self._offset_ns if last < held_since else None
        if wall_offset > self._offset_ns:
            self._offset_ns = wall_offset
        else:
            self._offset_ns = max(wall_offset, self._offset_ns - (monotonic - max(last, held_since)) // 2)
        return followed


_CLOCK = SteadyClock()


def steady_wall_ms() -> int:
    """This process's steady time (`SteadyClock`), in milliseconds since the epoch."""
    return _CLOCK.now_ms()


async def watch() -> None:
    """Read this process's steady clock every READ_EVERY_S until cancelled, so that a step is seen as it
    happens rather than at the next request that reads the clock."""
    while True:
        steady_wall_ms()
        await asyncio.sleep(READ_EVERY_S)
