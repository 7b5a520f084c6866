"""What the clients of the whole-node simulation work on: its queues, and what they count."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from node_simulation.history import QueueHistory

VHOST = "sim"
"""A vhost besides `/`: queue `stream` lives in it, known to the cluster by its qualified name."""
STRICT, AUTO, DEAD, STREAM = "strict", "auto", "dead", f"{VHOST}/stream"
QUEUE_ARGUMENTS: dict[str, dict[str, Any]] = {  # declared in this order
    DEAD: {"x-quorum-initial-group-size": 3},
    STRICT: {
        "x-quorum-initial-group-size": 3,
        "x-lease-period": 2000,
        "x-delivery-limit": 4,
        "x-overflow": "reject-publish",
        "x-dead-letter-queue": DEAD,
        "x-dead-letter-strategy": "at-least-once",
        "x-message-groups": True,
    },
    AUTO: {"x-quorum-initial-group-size": 3},
    STREAM: {"x-quorum-initial-group-size": 3, "x-dedupe-window": 3_600_000},
}
PUBLISHED_TO = (STRICT, AUTO, STREAM)
"""Queue `strict` hands out its messages by group (most name one of GROUPS: `_headers`) and only ever has
manual consumers and gets, so every message confirmed to it must be in it,
in its dead-letter target or acknowledged at the end. Queue `auto` also has auto-ack gets and consumers,
so a confirmed message may be missing only as many times as such a request went unanswered could have
taken (at most once allows losing what a failed request took, never what an answered one took). Queue
`stream` is read by a durable consumer as Spark reads one: every read of a delivery sequence number
must give the same message, and what it settled is gone. Queue `stream` also deduplicates by message id:
every message published to it carries its body as its id, so its window is in every entry, snapshot and
replay; no published queue may ever hold one body twice. It is of vhost `sim`, declared first."""
GROUPS = ("g0", "g1", "g2")
"""The message groups of queue `strict`."""
FANOUT = "fan"
FANNED_TO = (STRICT, AUTO)
"""The queues bound to exchange `fan` (and the operator's scratch queues, while they live): a publish
through it is a copy in each, confirmed once each committed its copy, each recorded in that queue's
history."""


@dataclass
class ClientStats:
    """What the clients did, and what at-most-once requests without an answer may have taken."""

    unanswered_auto: int = 0  # auto-ack gets and polls whose outcome the client never learnt
    unanswered_auto_limit: int = 0  # the messages those may have taken, at most
    forwarded: int = 0
    abandoned_consumers: int = 0
    members_added: int = 0
    members_removed: int = 0
    leaders_moved: int = 0
    filler_bytes: int = 0
    policies_changed: int = 0
    fanned_out: int = 0  # publishes through exchange `fan` confirmed by every queue it reached
    # scratch queues whose delete was answered and that were not declared since
    deleted: set[str] = field(default_factory=set)
    stale_replicas: dict[str, list[str]] = field(default_factory=dict)  # queue -> non-members hosting it
    histories: dict[str, QueueHistory] = field(
        default_factory=lambda: {queue: QueueHistory() for queue in PUBLISHED_TO}
    )
