"""The wall clock for expiry times that other nodes check (node assertions, bearer tokens).

It is the wall clock as read when the process started, advanced by the monotonic clock since: a later
step of the system clock (NTP, a resumed VM, the clock nemesis) does not move it, so a node whose clock
jumps neither signs assertions its peers refuse nor refuses theirs. Nodes must still start with
clocks within ASSERTION_TTL_MS of each other; see docs/decisions/0010-leader-clock.md.
"""

from __future__ import annotations

import time

_WALL_AT_START_NS = time.time_ns()
_MONOTONIC_AT_START_NS = time.monotonic_ns()


def steady_wall_ms() -> int:
    """Milliseconds since the epoch by the wall clock at start plus the monotonic time elapsed since."""
    return (_WALL_AT_START_NS + time.monotonic_ns() - _MONOTONIC_AT_START_NS) // 1_000_000
