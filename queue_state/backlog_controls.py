"""The backlog controls (issue 40, slice 4): how much a queue hands out, and when, and what it does not take
in once its backlog is long. From AMPS and rsyslog:

- `x-max-unacked` (AMPS's MaxBacklog): while the queue's checked-out messages (every holder's) number the
  cap, nothing is handed out to anyone; each consumer's prefetch still bounds it as well.
- `x-dequeue-interval-ms` (rsyslog's DequeueSlowdown): one message handed out per interval at most, for
  the whole queue, and no catching up after a quiet while.
- `x-dequeue-window` (rsyslog's dequeue time frame, `queue_state/dequeue_window.py`): nothing handed out
  outside the daily window.
- `x-discard-mark` with `x-discard-below-priority` (rsyslog's DiscardMark and DiscardSeverity): once the
  queue holds the mark of ready messages, a message published below that priority is dropped as it
  arrives, counted in `dropped` under `discarded`.

A hand-out is a delivery to a consumer, a get (a reader's too) or a durable consumer's checkout; a
redrive task's moves are not held back (its worker takes an empty checkout for the end of its task).
Time is the queue's, the greatest its entries carried: nothing here reads a clock.
"""

from __future__ import annotations

from queue_state.arguments import INT64_MAX, QueueConfig

DISCARDED = "discarded"
"""The `dropped` reason of a message discarded as it arrived (`x-discard-mark`)."""


def room(config: QueueConfig, now_ms: int, unacked: int, paced_at_ms: int | None) -> int:
    """How many messages the queue may hand out at `now_ms` while `unacked` are checked out: none outside
    its dequeue window, nor within its dequeue interval after the last paced hand-out (`paced_at_ms`), one
    with an interval, never more than its cap less `unacked`; INT64_MAX without any control."""
    window = config.window
    if window is not None and not window.is_open(now_ms):
        return 0
    allowed = INT64_MAX
    interval = config.dequeue_interval_ms
    if interval is not None:
        if paced_at_ms is not None and now_ms < paced_at_ms + interval:
            return 0
        allowed = 1
    cap = config.max_unacked
    return allowed if cap is None else min(allowed, max(cap - unacked, 0))


def next_opening_ms(config: QueueConfig, now_ms: int, unacked: int, paced_at_ms: int | None) -> int | None:
    """When the dequeue interval and window next let a hand-out happen, if they hold one back at `now_ms`;
    None when they do not, or when the cap holds it back anyway (a settle or a return makes room, not
    time)."""
    cap = config.max_unacked
    if cap is not None and unacked >= cap:
        return None
    at = now_ms
    interval = config.dequeue_interval_ms
    if interval is not None and paced_at_ms is not None:
        at = max(at, paced_at_ms + interval)
    window = config.window
    if window is not None:
        at = window.next_open_ms(at)
    return at if at > now_ms else None


def paced_at(config: QueueConfig, now_ms: int, handed_out: int, paced_at_ms: int | None) -> int | None:
    """When the queue last handed out under a dequeue interval, once `handed_out` messages went out at
    `now_ms`: None without an interval in force (so a queue that stops pacing keeps no time)."""
    if config.dequeue_interval_ms is None:
        return None
    return now_ms if handed_out else paced_at_ms


def discard_below(config: QueueConfig, ready: int) -> int:
    """The priority below which a message published while the queue holds `ready` ready messages is
    discarded: `x-discard-below-priority` once they number `x-discard-mark`, else 0 (none is)."""
    mark, below = config.discard_mark, config.discard_below_priority
    if mark is None or below is None or ready < mark:
        return 0
    return below
