"""A queue's counters as reported to the API and metrics."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Message counts and bytes by where messages are, plus counts of messages that left with a reason.

    `dead_lettered[reason]` counts messages handed to the dead-letter target (at-most-once effect or
    at-least-once pending); `dropped[reason]` counts messages removed for a reason with no target, and
    `dropped["dead_letter_strategy_changed"]` pending dead letters dropped by leaving at-least-once.
    `messages_delayed` counts messages waiting for their time (in `messages`, not in `messages_ready`);
    `messages_ready_by_priority` the ready ones of each priority level holding any. `dedupe_ids` counts
    the message ids the deduplication window holds, `dedupe_evicted` those it let go early (at
    `x-dedupe-max`), `dedupe_refused` the messages it refused as duplicates. On a queue with message
    groups, `groups` counts the groups that have a message in the queue, and `groups_blocked` those that
    have one out (held, or back and waiting for a delay), which hold back the rest of their group.
    """

    messages_ready: int
    messages_unacknowledged: int
    dlx_pending: int
    messages: int
    message_bytes: int
    message_bytes_ready: int
    message_bytes_unacknowledged: int
    message_bytes_dlx: int
    consumers: int
    publishers: int
    messages_delayed: int = 0
    messages_ready_by_priority: dict[int, int] = field(default_factory=dict)
    dead_lettered: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    dedupe_ids: int = 0
    dedupe_evicted: int = 0
    dedupe_refused: int = 0
    groups: int = 0
    groups_blocked: int = 0
