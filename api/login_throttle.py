"""Failed logins are limited per source address, so passwords cannot be guessed at the speed of scrypt.

A source (an IPv4 address, an IPv6 /64: `cluster.security.source_address`) that failed LOGIN_FAILURES times
within LOGIN_FAILURE_WINDOW_S is answered 429 with `Retry-After` (until the oldest of those failures
leaves the window) before any password is checked, the right one included: else a 429 for a wrong guess
and a 200 for the right one would let guessing go on. Other sources are not affected. At most
MAX_SOURCES sources are remembered; beyond that, the one whose last failure is oldest is forgotten.

A password check in progress counts against its source's limit as if it had failed (until it ends), and
a source has at most MAX_CHECKS_IN_FLIGHT checks in progress: so parallel guesses cannot all pass the
limit before the first of them fails, nor queue up for the scrypt slots and starve other logins.
Credentials checked before, or being checked by another request now, need no check of their own and
take no such place (`api.auth`), so many requests of one client logging in at once are not refused.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

LOGIN_FAILURES = 10
LOGIN_FAILURE_WINDOW_S = 60.0
MAX_SOURCES = 16384
MAX_CHECKS_IN_FLIGHT = 2


class LoginThrottled(Exception):
    """The source failed too often lately; it may try again in `retry_after_s`."""

    def __init__(self, source: str, retry_after_s: int) -> None:
        super().__init__(f"too many failed logins from {source}; retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class LoginThrottle:
    """The times of each source's latest failed logins, and its password checks in progress."""

    def __init__(
        self,
        failures: int = LOGIN_FAILURES,
        window_s: float = LOGIN_FAILURE_WINDOW_S,
        max_sources: int = MAX_SOURCES,
        max_in_flight: int = MAX_CHECKS_IN_FLIGHT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures = failures
        self.window_s = window_s
        self.max_sources = max_sources
        self.max_in_flight = max_in_flight
        self._clock = clock
        self._failed_at: OrderedDict[str, deque[float]] = OrderedDict()
        self._in_flight: dict[str, int] = {}  # checks in progress per source (none: absent)

    def refuse_if_blocked(self, source: str) -> None:
        """Raise LoginThrottled when `source` failed too often lately, whatever it is about to try."""
        now = self._clock()
        recent = self._recent_failures(source, now)
        if len(recent) >= self.failures:  # until the oldest of them leaves the window
            raise LoginThrottled(source, math.ceil(recent[0] + self.window_s - now))

    def begin(self, source: str) -> None:
        """Reserve a password check for `source` (end it with `end`), or raise LoginThrottled when
        `source` may not try a password now."""
        in_flight = self._in_flight.get(source, 0)
        if in_flight >= self.max_in_flight:
            raise LoginThrottled(source, 1)
        self.refuse_if_blocked(source)
        if len(self._recent_failures(source, self._clock())) + in_flight >= self.failures:
            raise LoginThrottled(source, 1)  # until checks in progress end
        self._in_flight[source] = in_flight + 1

    def _recent_failures(self, source: str, now: float) -> list[float]:
        return [t for t in self._failed_at.get(source, ()) if t + self.window_s > now]

    def end(self, source: str, failed: bool) -> None:
        """End a check `begin` reserved for `source`, counting it as a failed login when `failed`."""
        in_flight = self._in_flight.pop(source) - 1
        if in_flight:
            self._in_flight[source] = in_flight
        if failed:
            self._failed(source)

    def _failed(self, source: str) -> None:
        times = self._failed_at.get(source)
        if times is None:
            times = self._failed_at[source] = deque(maxlen=self.failures)
            while len(self._failed_at) > self.max_sources:
                self._failed_at.popitem(last=False)
        times.append(self._clock())
        self._failed_at.move_to_end(source)
