"""Failed logins are limited per source address, so passwords cannot be guessed at the speed of scrypt.

A source (an IPv4 address, an IPv6 /64: `cluster.source_address`) that failed LOGIN_FAILURES times
within LOGIN_FAILURE_WINDOW_S is answered 429 with `Retry-After` (until the oldest of those failures
leaves the window) before any password is checked, the right one included: else a 429 for a wrong guess
and a 200 for the right one would let guessing go on. Other sources are not affected. At most
MAX_SOURCES sources are remembered; beyond that, the one whose last failure is oldest is forgotten.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

LOGIN_FAILURES = 10
LOGIN_FAILURE_WINDOW_S = 60.0
MAX_SOURCES = 16384


class LoginThrottled(Exception):
    """The source failed too often lately; it may try again in `retry_after_s`."""

    def __init__(self, source: str, retry_after_s: int) -> None:
        super().__init__(f"too many failed logins from {source}; retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class LoginThrottle:
    """The times of each source's latest failed logins."""

    def __init__(
        self,
        failures: int = LOGIN_FAILURES,
        window_s: float = LOGIN_FAILURE_WINDOW_S,
        max_sources: int = MAX_SOURCES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures = failures
        self.window_s = window_s
        self.max_sources = max_sources
        self._clock = clock
        self._failed_at: OrderedDict[str, deque[float]] = OrderedDict()

    def check(self, source: str) -> None:
        """Raise LoginThrottled when `source` may not try a password now."""
        times = self._failed_at.get(source)
        if times is None or len(times) < self.failures:
            return
        wait_s = times[0] + self.window_s - self._clock()
        if wait_s > 0:
            raise LoginThrottled(source, math.ceil(wait_s))

    def failed(self, source: str) -> None:
        """Count a failed login from `source`."""
        times = self._failed_at.get(source)
        if times is None:
            times = self._failed_at[source] = deque(maxlen=self.failures)
            while len(self._failed_at) > self.max_sources:
                self._failed_at.popitem(last=False)
        times.append(self._clock())
        self._failed_at.move_to_end(source)
