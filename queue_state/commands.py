"""Commands every replica applies, as validated frozen dataclasses, and `EntryMeta`, what the log says
about the entry each one came in (its time).

A command carries no clock: the leader stamps its time once, in the envelope of the operation that
carries the command (`cluster/replication/entry_codec.py`), and the machine reads it from `EntryMeta`, as Ra
passes `Meta` to rabbit_fifo. Constructing a command or meta with a value it cannot take raises
`InvalidCommand`. The wire forms are in `queue_state/command_codec.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from queue_state.arguments import INT64_MAX, ArgumentError, QueueConfig
from queue_state.dedupe_window import MAX_DEDUPE_ID_CHARS
from queue_state.message_groups import group_name_problem
from queue_state.policy import check_policy_arguments
from queue_state.redrive import ENDED_STATES

MAX_REASON_CHARS = 256
"""The longest reason a rejecting consumer may give (`Discard.reason`)."""
MESSAGE_PRIORITY_MAX = 255
"""The highest priority a message may carry (an AMQP octet); a queue takes one above its top as its top."""


class InvalidCommand(ValueError):
    """A command field has a type or value the state machine does not accept."""


def _check_int(name: str, value: Any, minimum: int = 0) -> None:
    if type(value) is not int or not minimum <= value <= INT64_MAX:
        raise InvalidCommand(f"{name} must be an integer in [{minimum}, {INT64_MAX}], got {value!r}")


def _check_optional_int(name: str, value: Any, minimum: int = 0) -> None:
    if value is not None:
        _check_int(name, value, minimum)


def _check_name(name: str, value: Any) -> None:
    if type(value) is not str or not value:
        raise InvalidCommand(f"{name} must be a non-empty string, got {value!r}")


def _check_optional_name(name: str, value: Any) -> None:
    if value is not None:
        _check_name(name, value)


def _check_bool(name: str, value: Any) -> None:
    if type(value) is not bool:
        raise InvalidCommand(f"{name} must be a boolean, got {value!r}")


def _check_reason(reason: Any) -> None:
    if reason is not None and (type(reason) is not str or len(reason) > MAX_REASON_CHARS):
        raise InvalidCommand(f"reason must be a string of at most {MAX_REASON_CHARS} characters")


def _check_ids(ids: Any) -> None:
    if type(ids) is not tuple:
        raise InvalidCommand(f"ids must be a tuple, got {type(ids).__name__}")
    if ids and not (all(type(i) is int for i in ids) and min(ids) >= 0 and max(ids) <= INT64_MAX):
        for message_id in ids:  # settles carry up to thousands of ids: the loop only names the bad one
            _check_int("id", message_id)


@dataclass(frozen=True, slots=True)
class EntryMeta:
    """What the log says about the entry an operation came in: `now_ms`, the leader's clock when it
    proposed the operation. The machine's time is the greatest `now_ms` applied so far."""

    now_ms: int

    def __post_init__(self) -> None:
        _check_int("now_ms", self.now_ms)


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to enqueue: body size in bytes, an optional per-message TTL in ms, an optional delay in
    ms before it is ready (queue operations version 5; its TTL counts from the publish), a priority
    (queue operations version 6; 0 to 255 as AMQP allows, taken as the queue's top priority when above)
    the message id a queue with a deduplication window takes it by (queue operations version 11; at
    most MAX_DEDUPE_ID_CHARS characters) and the group a queue with message groups orders it in (queue
    operations version 13; 1 to MAX_GROUP_BYTES bytes of UTF-8)."""

    size: int
    expiration_ms: int | None = None
    delay_ms: int | None = None
    priority: int = 0
    dedupe_id: str | None = None
    group: str | None = None

    def __post_init__(self) -> None:
        _check_int("size", self.size)
        _check_optional_int("expiration_ms", self.expiration_ms)
        _check_optional_int("delay_ms", self.delay_ms, minimum=1)
        if type(self.priority) is not int or not 0 <= self.priority <= MESSAGE_PRIORITY_MAX:
            raise InvalidCommand(
                f"priority must be an integer in [0, {MESSAGE_PRIORITY_MAX}], got {self.priority!r}"
            )
        if self.dedupe_id is not None and (
            type(self.dedupe_id) is not str or not 0 < len(self.dedupe_id) <= MAX_DEDUPE_ID_CHARS
        ):
            raise InvalidCommand(
                f"dedupe_id must be a string of 1 to {MAX_DEDUPE_ID_CHARS} characters, got {self.dedupe_id!r}"
            )
        if self.group is not None and (problem := group_name_problem(self.group)) is not None:
            raise InvalidCommand(f"group {problem}")


@dataclass(frozen=True, slots=True)
class Enqueue:
    """Publish a batch; with `publisher` and `seq` a retry is answered with the first answer's ids."""

    messages: tuple[NewMessage, ...]
    publisher: str | None = None
    seq: int | None = None

    def __post_init__(self) -> None:
        if type(self.messages) is not tuple or any(type(m) is not NewMessage for m in self.messages):
            raise InvalidCommand("messages must be a tuple of NewMessage")
        _check_optional_name("publisher", self.publisher)
        _check_optional_int("seq", self.seq)
        if self.seq is not None and self.publisher is None:
            raise InvalidCommand("seq requires a publisher")


@dataclass(frozen=True, slots=True)
class Checkout:
    """Register a consumer or update its prefetch and priority.

    `timeout_ms` is the consumer's own consumer timeout (how long it may hold a delivery untouched
    before its leader ends it; None: the queue's or the node's); it is kept in the state so that a new
    leader applies the consumer's own timeout, not a default. With
    `since_ms` the consumer is a reader from that time: the serve step never delivers to it, it takes
    messages enqueued at or after `since_ms` with `Get`s under its name as it polls (queue operations
    version 2 and later, `cluster/replication/entry_codec.py`). With `auto_ack` (AMQP's no-ack, queue
    operations version 9) the consumer never settles: its leader settles what it hands out as it hands it out.
    The state holds its deliveries as any consumer's until that `Settle`, so its prefetch still bounds them
    and a new leader settles what it held as it hands it out again.
    """

    consumer: str
    prefetch: int
    priority: int = 0
    timeout_ms: int | None = None
    since_ms: int | None = None
    auto_ack: bool = False

    def __post_init__(self) -> None:
        _check_name("consumer", self.consumer)
        _check_int("prefetch", self.prefetch, minimum=1)
        _check_int("priority", self.priority, minimum=-INT64_MAX)
        _check_optional_int("timeout_ms", self.timeout_ms, minimum=1)
        _check_optional_int("since_ms", self.since_ms)
        _check_bool("auto_ack", self.auto_ack)


@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel a consumer (or release a get holder); its unacked messages return to the queue.

    With `failed` (the default, and how every Cancel written before queue operations version 3
    applies) they return as failed deliveries; a leader writing version 3 sends False: a cancel is a
    plain return, as in RabbitMQ 4.3."""

    consumer: str
    failed: bool = True

    def __post_init__(self) -> None:
        _check_name("consumer", self.consumer)
        _check_bool("failed", self.failed)


@dataclass(frozen=True, slots=True)
class ConsumerDown:
    """The consumer (or get holder) is gone; its unacked messages return to the queue."""

    consumer: str

    def __post_init__(self) -> None:
        _check_name("consumer", self.consumer)


@dataclass(frozen=True, slots=True)
class _ByIds:
    ids: tuple[int, ...]
    consumer: str | None = None

    def __post_init__(self) -> None:
        _check_ids(self.ids)
        _check_optional_name("consumer", self.consumer)


@dataclass(frozen=True, slots=True)
class Settle(_ByIds):
    """Acknowledge checked-out messages; `consumer` None means whoever holds each one."""


@dataclass(frozen=True, slots=True)
class Return(_ByIds):
    """Nack with requeue: the messages go back to the queue, with one more failed delivery when `failed`
    (the default, as every Return before queue operations version 3) or as a plain return without.
    With `delay_ms` (version 5) they wait that long before they are ready again (0: not at all), whatever
    the queue's delayed retry says."""

    failed: bool = True
    delay_ms: int | None = None

    def __post_init__(self) -> None:
        _ByIds.__post_init__(self)
        _check_bool("failed", self.failed)
        _check_optional_int("delay_ms", self.delay_ms)


@dataclass(frozen=True, slots=True)
class Discard(_ByIds):
    """Nack without requeue: the messages are dead-lettered with reason `rejected`, and the consumer's
    `reason` (at most MAX_REASON_CHARS characters) kept with each dead letter (version 3)."""

    reason: str | None = None

    def __post_init__(self) -> None:
        _ByIds.__post_init__(self)
        _check_reason(self.reason)


@dataclass(frozen=True, slots=True)
class Touch(_ByIds):
    """Extend the hold of checked-out messages (queue operations version 4): each id `consumer` holds
    (whoever holds it when None) counts from this entry's time as just handed out, for the lease
    (`x-lease-period`) and the consumer timeout alike. A durable consumer's deliveries never expire:
    touching them changes nothing."""


@dataclass(frozen=True, slots=True)
class Get:
    """basic.get: take up to `count` ready messages; manual-ack ones are held by `holder`.

    With `since_ms`, only messages enqueued at or after that time are taken, older ones staying where
    they are (reading a dead-letter queue from a point in time, the Logstash way). A manual-ack get
    whose holder is a reader (`Checkout` with `since_ms`) reads from the reader's time instead, and
    takes at most what its prefetch leaves room for, held by the reader.
    """

    holder: str
    count: int
    auto_ack: bool
    since_ms: int | None = None

    def __post_init__(self) -> None:
        _check_name("holder", self.holder)
        _check_int("count", self.count, minimum=1)
        _check_bool("auto_ack", self.auto_ack)
        _check_optional_int("since_ms", self.since_ms)


@dataclass(frozen=True, slots=True)
class Purge:
    """Remove every ready message."""


@dataclass(frozen=True, slots=True)
class Tick:
    """Let time pass: expire messages, leases, idle publishers and the queue itself."""


@dataclass(frozen=True, slots=True)
class UpdateConfig:
    """Replace the queue's configuration (policy change)."""

    config: QueueConfig

    def __post_init__(self) -> None:
        if type(self.config) is not QueueConfig:
            raise InvalidCommand("config must be a QueueConfig")


@dataclass(frozen=True, slots=True)
class ApplyPolicy:
    """Apply policy `policy` ("" for none), whose definition sets these runtime `arguments`, as the
    metadata's policies at `revision` choose it for the queue (its leader proposes one for each new
    revision); one of an older revision than the queue applied is ignored."""

    policy: str
    arguments: dict[str, Any]
    revision: int

    def __post_init__(self) -> None:
        if type(self.policy) is not str:
            raise InvalidCommand(f"policy must be a string, got {self.policy!r}")
        _check_int("revision", self.revision)
        if not self.policy and self.arguments:
            raise InvalidCommand("no policy sets no arguments")
        try:
            check_policy_arguments(self.arguments)
        except ArgumentError as exc:
            raise InvalidCommand(f"policy argument {exc}") from exc


@dataclass(frozen=True, slots=True)
class DlxCheckout:
    """The at-least-once dead-letter worker asks for pending dead letters (taking over from another)."""

    worker: str
    prefetch: int

    def __post_init__(self) -> None:
        _check_name("worker", self.worker)
        _check_int("prefetch", self.prefetch, minimum=1)


@dataclass(frozen=True, slots=True)
class DlxSettle:
    """The dead-letter target confirmed these messages; they leave the queue."""

    ids: tuple[int, ...]

    def __post_init__(self) -> None:
        _check_ids(self.ids)


@dataclass(frozen=True, slots=True)
class DurableCheckout:
    """Register durable consumer `consumer` if new and check out up to `count` ready messages to it.

    Each message taken gets the next number of the consumer's delivery sequence. With `since_ms`, only
    messages enqueued at or after that time are taken, older ones staying where they are (as for Get).
    With `max_bytes`, messages are taken while their bodies add up to at most that many bytes, but the
    first one always is, however large."""

    consumer: str
    count: int
    since_ms: int | None = None
    max_bytes: int | None = None

    def __post_init__(self) -> None:
        _check_name("consumer", self.consumer)
        _check_int("count", self.count)
        _check_optional_int("since_ms", self.since_ms)
        _check_optional_int("max_bytes", self.max_bytes, minimum=1)


@dataclass(frozen=True, slots=True)
class DurableSettle:
    """Settle every delivery of durable consumer `consumer` numbered below `below` (idempotent)."""

    consumer: str
    below: int

    def __post_init__(self) -> None:
        _check_name("consumer", self.consumer)
        _check_int("below", self.below)


@dataclass(frozen=True, slots=True)
class Seal:
    """The first step of a guarded delete: if the queue is empty (`if_empty`) and has no consumers
    (`if_unused`), stop taking publishes and new consumers for good, so that it can be deleted."""

    if_empty: bool
    if_unused: bool

    def __post_init__(self) -> None:
        _check_bool("if_empty", self.if_empty)
        _check_bool("if_unused", self.if_unused)


@dataclass(frozen=True, slots=True)
class StartRedrive:
    """Start redrive task `task`: move the ready messages there now enqueued from `since_ms` to
    `until_ms` (the entry's time when None) to `target` (None: each to the queue its `x-death` names), at
    most `rate` a second (`queue_state/redrive.py`). The same task again, with the same settings, changes
    nothing."""

    task: str
    target: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    rate: int | None = None

    def __post_init__(self) -> None:
        _check_name("task", self.task)
        _check_optional_name("target", self.target)
        _check_optional_int("since_ms", self.since_ms)
        _check_optional_int("until_ms", self.until_ms)
        _check_optional_int("rate", self.rate, minimum=1)


@dataclass(frozen=True, slots=True)
class RedriveCheckout:
    """Number up to `count` more messages of task `task`'s window for its durable consumer, while it runs
    as `serial` (a worker of an earlier task of that name is refused)."""

    task: str
    serial: int
    count: int

    def __post_init__(self) -> None:
        _check_name("task", self.task)
        _check_int("serial", self.serial)
        _check_int("count", self.count)


@dataclass(frozen=True, slots=True)
class RedriveSettle:
    """Task `task`'s messages numbered below `below` reached their targets: they leave the queue (while
    it runs as `serial`)."""

    task: str
    serial: int
    below: int

    def __post_init__(self) -> None:
        _check_name("task", self.task)
        _check_int("serial", self.serial)
        _check_int("below", self.below)


@dataclass(frozen=True, slots=True)
class EndRedrive:
    """End task `task` if it runs as `serial`, as `state` (`completed`: its consumer holds nothing;
    `cancelled` or `failed`, with a `reason`: what it holds returns to the queue, as plain returns)."""

    task: str
    serial: int
    state: str
    reason: str | None = None

    def __post_init__(self) -> None:
        _check_name("task", self.task)
        _check_int("serial", self.serial)
        if self.state not in ENDED_STATES:
            raise InvalidCommand(f"state must be one of {', '.join(ENDED_STATES)}, got {self.state!r}")
        _check_reason(self.reason)


Command = (
    Enqueue
    | Checkout
    | Cancel
    | ConsumerDown
    | Settle
    | Return
    | Discard
    | Touch
    | Get
    | Purge
    | Tick
    | UpdateConfig
    | ApplyPolicy
    | DlxCheckout
    | DlxSettle
    | DurableCheckout
    | DurableSettle
    | Seal
    | StartRedrive
    | RedriveCheckout
    | RedriveSettle
    | EndRedrive
)
