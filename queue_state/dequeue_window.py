"""`x-dequeue-window`: the daily time window, in UTC, during which a queue hands messages out (rsyslog's
DequeueTimeBegin and DequeueTimeEnd, to the minute instead of the hour).

Written `"HH:MM-HH:MM"`: open from the first minute (inclusive) to the second (exclusive), wrapping past
midnight when the second is earlier (`"22:00-06:00"` is open at night). Both the same is refused: it
would say neither always nor never. Times are the queue's, in ms since the epoch: nothing here reads a
clock.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS
_FORM = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]):([0-5][0-9])")


@dataclass(frozen=True, slots=True)
class DequeueWindow:
    """A daily window: open from `opens_ms` to `closes_ms`, both in ms after midnight UTC."""

    opens_ms: int
    closes_ms: int

    @classmethod
    @functools.lru_cache(maxsize=256)
    def parse(cls, text: str) -> DequeueWindow:
        """The window `"HH:MM-HH:MM"` says (cached: a queue asks it on every apply and timer); ValueError
        for any other text, or an empty window."""
        found = _FORM.fullmatch(text)
        if found is None:
            raise ValueError(f'must be "HH:MM-HH:MM" (UTC, 00:00 to 23:59), got {text!r}')
        open_h, open_m, close_h, close_m = (int(part) for part in found.groups())
        window = cls((open_h * 60 + open_m) * MINUTE_MS, (close_h * 60 + close_m) * MINUTE_MS)
        if window.opens_ms == window.closes_ms:
            raise ValueError(f"opens and closes at the same minute: {text!r}")
        return window

    def is_open(self, now_ms: int) -> bool:
        """Whether the window is open at `now_ms`."""
        of_day = now_ms % DAY_MS
        if self.opens_ms < self.closes_ms:
            return self.opens_ms <= of_day < self.closes_ms
        return of_day >= self.opens_ms or of_day < self.closes_ms

    def next_open_ms(self, now_ms: int) -> int:
        """The first ms at or after `now_ms` at which the window is open."""
        if self.is_open(now_ms):
            return now_ms
        opens = now_ms - now_ms % DAY_MS + self.opens_ms
        return opens if opens > now_ms else opens + DAY_MS
