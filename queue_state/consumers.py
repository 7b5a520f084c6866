"""Who holds checked-out messages, and which consumer is served next.

Consumers are served by priority (higher first) and round-robin among equal priority, each up to its
prefetch. With single active consumer only one is served; the others wait, ordered by priority and
then by registration, and the first of them takes over when the active one leaves. A reader (a consumer
registered with `since_ms`) is never served: it takes what it reads with gets, and is never the active
one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from queue_state.messages import HeldMessage


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """A consumer as seen from outside."""

    name: str
    prefetch: int
    priority: int
    active: bool
    unacknowledged: int
    timeout_ms: int | None = None
    since_ms: int | None = None
    auto_ack: bool = False


class Holder:
    """Anything holding checked-out messages: a `Get` with manual ack, or a consumer."""

    __slots__ = ("held", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.held: dict[int, HeldMessage] = {}

    def take(self, message_id: int) -> HeldMessage:
        """Stop holding a message."""
        return self.held.pop(message_id)


class Consumer(Holder):
    """A registered consumer: served while it has credit (prefetch minus held messages), unless it is a
    reader from `since_ms`; `auto_ack` when its leader settles what it hands out."""

    __slots__ = ("auto_ack", "prefetch", "priority", "registration", "since_ms", "timeout_ms")

    def __init__(
        self,
        name: str,
        prefetch: int,
        priority: int,
        registration: int,
        timeout_ms: int | None = None,
        since_ms: int | None = None,
        auto_ack: bool = False,
    ) -> None:
        super().__init__(name)
        self.prefetch = prefetch
        self.priority = priority
        self.registration = registration
        self.timeout_ms = timeout_ms
        self.since_ms = since_ms
        self.auto_ack = auto_ack

    @property
    def has_credit(self) -> bool:
        return len(self.held) < self.prefetch

    @property
    def is_reader(self) -> bool:
        """True for a reader from a time: it takes with gets, the serve step never delivers to it."""
        return self.since_ms is not None


class ConsumerRegistry:
    """The queue's consumers, their service order, and (with single active consumer) the active one."""

    __slots__ = ("_active", "_by_name", "_next_registration", "_rotations", "_single_active")

    def __init__(self, single_active: bool) -> None:
        self._single_active = single_active
        self._by_name: dict[str, Consumer] = {}
        self._rotations: dict[int, deque[Consumer]] = {}
        self._active: Consumer | None = None
        self._next_registration = 0

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[Consumer]:
        """Consumers in registration order."""
        return iter(self._by_name.values())

    def get(self, name: str) -> Consumer | None:
        return self._by_name.get(name)

    def is_active(self, consumer: Consumer) -> bool:
        return not self._single_active or consumer is self._active

    def register(
        self,
        name: str,
        prefetch: int,
        priority: int,
        timeout_ms: int | None = None,
        since_ms: int | None = None,
        auto_ack: bool = False,
    ) -> None:
        """Add a consumer, or update an existing one's prefetch, priority, timeout, reader time and
        auto-ack."""
        consumer = self._by_name.get(name)
        if consumer is None:
            consumer = Consumer(
                name, prefetch, priority, self._next_registration, timeout_ms, since_ms, auto_ack
            )
            self._next_registration += 1
            self._by_name[name] = consumer
        else:
            self._leave_rotation(consumer)
            if consumer is self._active and since_ms is not None:
                self._active = None
            consumer.prefetch = prefetch
            consumer.priority = priority
            consumer.timeout_ms = timeout_ms
            consumer.since_ms = since_ms
            consumer.auto_ack = auto_ack
        if not consumer.is_reader:
            self._rotations.setdefault(priority, deque()).append(consumer)
        self._elect()

    def remove(self, name: str) -> Consumer | None:
        consumer = self._by_name.pop(name, None)
        if consumer is not None:
            self._leave_rotation(consumer)
            if consumer is self._active:
                self._active = None
            self._elect()
        return consumer

    def set_single_active(self, single_active: bool) -> None:
        self._single_active = single_active
        if not single_active:
            self._active = None
        self._elect()

    def next_with_credit(self) -> Consumer | None:
        """The consumer to serve next, rotated to the back of its priority level; None if nobody can."""
        if self._single_active:
            active = self._active
            return active if active is not None and active.has_credit else None
        for priority in sorted(self._rotations, reverse=True):
            rotation = self._rotations[priority]
            for _ in range(len(rotation)):
                consumer = rotation[0]
                rotation.rotate(-1)
                if consumer.has_credit:
                    return consumer
        return None

    @property
    def someone_could_take(self) -> bool:
        """Whether a consumer could take a message now: one `next_with_credit` would find to serve (it is
        not asked: it turns the rotation), or a reader with room under its prefetch (it takes with gets)."""
        if any(consumer.is_reader and consumer.has_credit for consumer in self._by_name.values()):
            return True
        if self._single_active:
            return self._active is not None and self._active.has_credit
        return any(consumer.has_credit for rotation in self._rotations.values() for consumer in rotation)

    def served_in_a_row(self, consumer: Consumer) -> int:
        """How many messages in a row `consumer`, just returned by `next_with_credit`, is served before
        the order would turn to another: all its credit when it is the active one or alone at its
        priority, else one."""
        if self._single_active or len(self._rotations[consumer.priority]) == 1:
            return consumer.prefetch - len(consumer.held)
        return 1

    def _leave_rotation(self, consumer: Consumer) -> None:
        if consumer.is_reader:
            return
        rotation = self._rotations[consumer.priority]
        rotation.remove(consumer)
        if not rotation:
            del self._rotations[consumer.priority]

    def _elect(self) -> None:
        if self._single_active and self._active is None:
            served = [c for c in self._by_name.values() if not c.is_reader]
            if served:
                self._active = min(served, key=lambda c: (-c.priority, c.registration))

    @property
    def has_readers(self) -> bool:
        return any(c.is_reader for c in self._by_name.values())

    @property
    def has_auto_ack(self) -> bool:
        return any(c.auto_ack for c in self._by_name.values())

    def to_wire(self) -> dict[str, Any]:
        """Registration counter, consumers in registration-dict order (a reader's row with its time as a
        sixth field, snapshot version 3; an auto-ack consumer's with true as a seventh, version 9),
        rotation order, active one."""
        return {
            "next_registration": self._next_registration,
            "consumers": [_consumer_row(c) for c in self._by_name.values()],
            "rotations": [[p, [c.name for c in r]] for p, r in self._rotations.items()],
            "active": None if self._active is None else self._active.name,
        }

    @classmethod
    def from_wire(cls, single_active: bool, wire: dict[str, Any]) -> ConsumerRegistry:
        registry = cls(single_active)
        registry._next_registration = wire["next_registration"]
        # after the name: prefetch, priority, registration (all before timeouts), timeout_ms, then since_ms
        # (a reader, or before auto_ack) and auto_ack (true)
        for name, *fields in wire["consumers"]:
            registry._by_name[name] = Consumer(name, *fields)
        for priority, names in wire["rotations"]:
            registry._rotations[priority] = deque(registry._by_name[name] for name in names)
        if wire["active"] is not None:
            registry._active = registry._by_name[wire["active"]]
        return registry


def _consumer_row(consumer: Consumer) -> list[Any]:
    row = [consumer.name, consumer.prefetch, consumer.priority, consumer.registration, consumer.timeout_ms]
    if consumer.auto_ack:
        return [*row, consumer.since_ms, True]
    return row if consumer.since_ms is None else [*row, consumer.since_ms]
