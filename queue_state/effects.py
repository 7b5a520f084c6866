"""What `QueueMachine.apply` returns: a reply for the caller and effects for the node to carry out.

Effects are data; the node performs them in list order. Bodies live in the node's store, keyed by
message id: a `DeadLetter` needs them, so `ForgetBodies` always comes after it. For an auto-ack `Get`
the reply's messages are forgotten at once: the node reads the reply's bodies before running effects.
"""

from __future__ import annotations

from dataclasses import dataclass

from queue_state.arguments import DeadLetterRoute


@dataclass(slots=True)
class Delivery:
    """One message handed out; `delivery_count` is the number of failed attempts before this one,
    `acquired_count` the number of hand-outs before this one (failed or plain returns), `priority` its
    level.

    Not frozen: a frozen dataclass takes five times as long to build (1 us more per message here), and
    the queue makes one for every message it hands out. Nothing changes one after it is made."""

    id: int
    delivery_count: int
    redelivered: bool
    enqueued_at_ms: int
    acquired_count: int = 0
    priority: int = 0


# Effects


@dataclass(frozen=True, slots=True)
class Deliver:
    """Send these messages (bodies read by id) to a consumer, in order."""

    consumer: str
    deliveries: tuple[Delivery, ...]


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """At-most-once dead-lettering: publish these with x-death along `route`, then forget them.

    `reason` is one of `rejected`, `expired`, `maxlen`, `delivery_limit`; `reason_text` is what the
    consumer that rejected them said (`Discard.reason`), if anything.
    """

    reason: str
    route: DeadLetterRoute
    deliveries: tuple[Delivery, ...]
    reason_text: str | None = None


@dataclass(frozen=True, slots=True)
class ForgetBodies:
    """These messages left the queue for good; their bodies may be deleted."""

    ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class QueueExpired:
    """The queue stayed unused for its `x-expires` period; the node should delete it."""


Effect = Deliver | DeadLetter | ForgetBodies | QueueExpired


# Replies


@dataclass(frozen=True, slots=True)
class Enqueued:
    """The publish was taken; these ids were assigned, in message order, and those of them in `discarded`
    were dropped as they arrived (`x-discard-mark`). `duplicates` pairs the position of each message the
    deduplication window refused (`x-dedupe-window`; its assigned id was not enqueued) with the id its
    message id first got. Only the machine's reply carries `discarded`: the door's `Published` and the
    HTTP answer do not."""

    ids: tuple[int, ...]
    discarded: tuple[int, ...] = ()
    duplicates: tuple[tuple[int, int], ...] = ()

    def answered_ids(self) -> tuple[int, ...]:
        """The ids a publisher is answered: the assigned ones, a duplicate's replaced by its first id."""
        return answered_ids(self.ids, self.duplicates)


def answered_ids(assigned: tuple[int, ...], duplicates: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """The ids a publish is answered: those `assigned`, each (position, first id) of `duplicates` in its
    place."""
    if not duplicates:
        return assigned
    ids = list(assigned)
    for position, first_id in duplicates:
        ids[position] = first_id
    return tuple(ids)


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The (publisher, seq) was enqueued before: its ids as first answered, or None when they were trimmed
    from the window; `duplicates` as the first `Enqueued` answered them."""

    ids: tuple[int, ...] | None
    duplicates: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Rejected:
    """The whole publish was refused (reject-publish overflow)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Ok:
    """The command was applied."""


@dataclass(frozen=True, slots=True)
class Acked:
    """What a `Settle` settled: `ids`, those of the ids it named that the consumer held (in the order
    named), and `failure` naming the others (None when there were none). A Settle that settled nothing
    answers the `Failure` alone."""

    ids: tuple[int, ...]
    failure: Failure | None = None


@dataclass(frozen=True, slots=True)
class Deliveries:
    """Messages returned by `Get` or `DlxCheckout`; for the latter `reasons[i]` is why deliveries[i] died
    and `reason_texts[i]` what its rejecting consumer said (None: nothing)."""

    deliveries: tuple[Delivery, ...]
    reasons: tuple[str, ...] = ()
    reason_texts: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class Purged:
    """`count` ready messages were removed."""

    count: int


@dataclass(frozen=True, slots=True)
class DurablePosition:
    """A durable consumer's delivery sequence: settled below `settled`, handed out below `end`; a
    checkout also reports the body bytes of the messages it took."""

    settled: int
    end: int
    taken_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Failure:
    """The command (or part of it, for unknown ids) could not be applied."""

    code: str
    reason: str


Reply = Enqueued | Duplicate | Rejected | Ok | Acked | Deliveries | Purged | DurablePosition | Failure


class EffectCollector:
    """Gathers one command's effects; emits deliveries, then dead letters, then forgets."""

    __slots__ = ("_dead_letters", "_deliveries", "_forgotten", "_queue_expired")

    def __init__(self) -> None:
        self._deliveries: dict[str, list[Delivery]] = {}
        self._dead_letters: dict[tuple[str, DeadLetterRoute, str | None], list[Delivery]] = {}
        self._forgotten: list[int] = []
        self._queue_expired = False

    def deliver_all(self, consumer: str, deliveries: list[Delivery]) -> None:
        self._deliveries.setdefault(consumer, []).extend(deliveries)

    def dead_letter(
        self, reason: str, route: DeadLetterRoute, delivery: Delivery, reason_text: str | None = None
    ) -> None:
        self._dead_letters.setdefault((reason, route, reason_text), []).append(delivery)

    def forget(self, message_id: int) -> None:
        self._forgotten.append(message_id)

    def forget_all(self, message_ids: list[int]) -> None:
        self._forgotten.extend(message_ids)

    def queue_expired(self) -> None:
        self._queue_expired = True

    def effects(self) -> list[Effect]:
        effects: list[Effect] = [
            Deliver(consumer, tuple(deliveries)) for consumer, deliveries in self._deliveries.items()
        ]
        effects.extend(
            DeadLetter(reason, route, tuple(deliveries), text)
            for (reason, route, text), deliveries in self._dead_letters.items()
        )
        if self._forgotten:
            effects.append(ForgetBodies(tuple(self._forgotten)))
        if self._queue_expired:
            effects.append(QueueExpired())
        return effects
