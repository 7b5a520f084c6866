"""At-least-once dead-lettering: dead letters held in the source queue until a worker confirms them.

One worker at a time (RabbitMQ's single dlx worker on the leader) checks out up to its prefetch; a
checkout by another worker takes over and the previous worker's unsettled messages go back to the
front of the pending queue.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, NamedTuple

from queue_state.effects import Delivery
from queue_state.messages import ReadyMessage


class PendingDeadLetter(NamedTuple):
    """A dead-lettered message awaiting confirmation, why it died, whether a worker had it before, and
    what the consumer that rejected it said (`Discard.reason`), if anything."""

    message: ReadyMessage
    reason: str
    handed_out: bool
    reason_text: str | None = None

    def delivery(self) -> Delivery:
        """The message as handed to the worker: as a consumer would get it, redelivered when a worker had
        it before."""
        return replace(self.message.delivery(), redelivered=self.handed_out)


class DeadLetterQueue:
    """Pending dead letters (in dead-letter order) and the current worker's outstanding ones."""

    __slots__ = ("_bytes", "_outstanding", "_pending", "_worker")

    def __init__(self) -> None:
        self._pending: deque[PendingDeadLetter] = deque()
        self._outstanding: dict[int, PendingDeadLetter] = {}
        self._worker: str | None = None
        self._bytes = 0

    def __len__(self) -> int:
        """Every dead letter not yet confirmed, whether waiting or with the worker."""
        return len(self._pending) + len(self._outstanding)

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def add(self, message: ReadyMessage, reason: str, reason_text: str | None = None) -> None:
        self._pending.append(PendingDeadLetter(message, reason, False, reason_text))
        self._bytes += message.size

    def checkout(self, worker: str, prefetch: int) -> list[PendingDeadLetter]:
        """Hand `worker` pending dead letters up to `prefetch` outstanding, taking over if it is new."""
        if worker != self._worker:
            self._pending.extendleft(reversed(self._outstanding.values()))
            self._outstanding.clear()
            self._worker = worker
        handed = []
        while self._pending and len(self._outstanding) < prefetch:
            letter = self._pending.popleft()
            self._outstanding[letter.message.id] = letter._replace(handed_out=True)
            handed.append(letter)
        return handed

    def settle(self, ids: tuple[int, ...]) -> tuple[list[int], list[int]]:
        """Confirm outstanding dead letters: (settled ids, ids the worker did not hold)."""
        settled, unknown = [], []
        for message_id in ids:
            letter = self._outstanding.pop(message_id, None)
            if letter is None:
                unknown.append(message_id)
            else:
                settled.append(message_id)
                self._bytes -= letter.message.size
        return settled, unknown

    def drop_all(self) -> list[int]:
        """Forget every dead letter (the strategy left at-least-once); return their ids."""
        ids = [letter.message.id for letter in self]
        self._pending.clear()
        self._outstanding.clear()
        self._bytes = 0
        return ids

    def __iter__(self) -> Iterator[PendingDeadLetter]:
        """Outstanding dead letters first, then pending ones in order."""
        yield from self._outstanding.values()
        yield from self._pending

    def only_counted_failures(self) -> bool:
        """True when no dead letter has a reason text or an acquired count apart from its delivery count:
        the form of snapshots before version 4 then holds them whole."""
        return all(
            letter.reason_text is None and letter.message.acquired == letter.message.delivery_count
            for letter in self
        )

    def to_wire(self, width: int = 7) -> dict[str, Any]:
        """The snapshot form; rows `[*message's first width fields, reason, handed_out, reason_text]`, or
        with a `width` of 5 the rows of snapshots before version 4 (`[*message without acquired, reason,
        handed_out]`)."""
        return {
            "worker": self._worker,
            "outstanding": [_letter_to_wire(letter, width) for letter in self._outstanding.values()],
            "pending": [_letter_to_wire(letter, width) for letter in self._pending],
        }

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> DeadLetterQueue:
        queue = cls()
        queue._worker = wire["worker"]
        for item in wire["outstanding"]:
            letter = _letter_from_wire(item)
            queue._outstanding[letter.message.id] = letter
            queue._bytes += letter.message.size
        for item in wire["pending"]:
            letter = _letter_from_wire(item)
            queue._pending.append(letter)
            queue._bytes += letter.message.size
        return queue


def _letter_to_wire(letter: PendingDeadLetter, width: int) -> list[Any]:
    if width > 5:
        return [*letter.message[:width], letter.reason, letter.handed_out, letter.reason_text]
    return [*letter.message[:5], letter.reason, letter.handed_out]


def _letter_from_wire(item: list[Any]) -> PendingDeadLetter:
    if len(item) == 7:  # before version 4: five message fields, no reason text
        *message, reason, handed_out = item
        return PendingDeadLetter(ReadyMessage.of_wire(message), reason, handed_out)
    *message, reason, handed_out, reason_text = item
    return PendingDeadLetter(ReadyMessage.of_wire(message), reason, handed_out, reason_text)
