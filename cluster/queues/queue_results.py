"""What a queue's door (`QueueDoor`) answers: typed results that hold no `queue_state` type.

Refusals are not results: they are raised as `cluster.errors` exceptions named for what they mean.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cluster.replication.stored_message import StoredMessage
    from queue_state.effects import Delivery


@dataclass(slots=True)
class MessageRow:
    """One message handed out (delivered, got, browsed or read again from a durable consumer's log).

    `delivery_count` is the number of failed deliveries before this one, `acquired_count` the number of
    hand-outs before this one (`redelivered` when above 0); `seq` is the durable consumer's sequence
    number, on a durable log read only; `priority` the message's level. Not frozen: a frozen dataclass
    takes three times as long to build, and a poll answer builds one per message."""

    id: int
    body: bytes | memoryview  # a view into the entry that carries it, when read from the log
    encoding: str
    headers: dict[str, Any]
    delivery_count: int
    redelivered: bool
    published_at_ms: int
    seq: int | None = None
    acquired_count: int = 0
    priority: int = 0

    @classmethod
    def of(cls, delivery: Delivery, stored: StoredMessage, seq: int | None = None) -> MessageRow:
        """The row of a delivery with its stored body."""
        return cls(
            delivery.id,
            stored.body,
            stored.encoding,
            stored.headers,
            delivery.delivery_count,
            delivery.redelivered,
            delivery.enqueued_at_ms,
            seq,
            delivery.acquired_count,
            delivery.priority,
        )


@dataclass(frozen=True, slots=True)
class Published:
    """A publish the queue took: the ids of its messages, in order (empty for a duplicate whose ids
    left the publisher's window); `duplicate` when (publisher, seq) was enqueued before, or every message
    was a duplicate by its message id; `duplicates` the positions of the messages the queue's
    deduplication window refused, each answered with the id its message id first got."""

    ids: list[int]
    duplicate: bool
    duplicates: list[int] = field(default_factory=list)


class Outcome(Enum):
    """How checked-out messages are settled."""

    ACK = "ack"
    REQUEUE = "requeue"  # nack, back to the queue (one more failed delivery unless `failed` is false)
    DISCARD = "discard"  # nack without requeue: dead-lettered with reason `rejected`


@dataclass(frozen=True, slots=True)
class Settled:
    """A settle that was applied; `warning` says why part of it changed nothing (e.g. ids already
    settled by a retried ack)."""

    warning: str | None = None


@dataclass(frozen=True, slots=True)
class Position:
    """A durable consumer's delivery sequence: settled below `settled`, handed out below `end`; a
    checkout also reports the body `bytes` of the messages it took."""

    consumer: str
    settled: int
    end: int
    bytes: int


@dataclass(frozen=True, slots=True)
class QueueCounts:
    """A queue's counters on its leader: messages and bytes by where they are (`messages_delayed`: waiting
    for their time; `messages_ready_by_priority`: the ready ones of each level holding any), consumers,
    messages that left with a reason (`dead_lettered` to a target, `dropped` without one), the next
    message id, the deduplication window's ids held, let go early and duplicates refused, and the message
    groups holding a message and those blocked by one out."""

    messages: int
    messages_ready: int
    messages_unacknowledged: int
    messages_dlx: int
    message_bytes: int
    consumers: int
    dead_lettered: dict[str, int]
    dropped: dict[str, int]
    dead_letter_bytes: int
    next_id: int
    messages_delayed: int = 0
    messages_ready_by_priority: dict[int, int] = field(default_factory=dict)
    dedupe_ids: int = 0
    dedupe_evicted: int = 0
    dedupe_refused: int = 0
    groups: int = 0
    groups_blocked: int = 0


@dataclass(frozen=True, slots=True)
class RedriveProgress:
    """A redrive task of a queue as its callers see it (`queue_state.redrive.RedriveTask` without what
    only its worker needs)."""

    task: str
    state: str
    target: str | None
    since_ms: int | None
    until_ms: int
    rate: int | None
    total: int
    moved: int
    started_ms: int
    ended_ms: int | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class ConsumerSummary:
    """A consumer of a queue as operators see it: its tag (a durable consumer's name), credit, priority,
    whether it is served now (single active consumer), what it holds, its own timeout, the time a reader
    reads from, whether its leader settles for it (`auto_ack`), and whether it is durable."""

    tag: str
    prefetch: int | None
    priority: int
    active: bool
    unacknowledged: int
    timeout_ms: int | None = None
    since_ms: int | None = None
    auto_ack: bool = False
    durable: bool = False
