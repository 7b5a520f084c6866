"""Delayed messages: those waiting for a time before they are ready (a delayed retry, a nack's delay, a
publish's delay).

When its time comes, a returned message goes back where a return goes then (`returns`, or `main`'s tail
without a delivery limit: the machine decides) and a published one takes its place among its level's
ready messages by id (`ReadyMessages.push_due`: FIFO among never-delivered messages). Nothing here reads
a clock: the machine says what time it is.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from enum import IntEnum

from queue_state.messages import ReadyMessage


class Destination(IntEnum):
    """Where a delayed message goes when its time comes."""

    PUBLISHED = 0  # among ready messages by id
    RETURNED = 1  # where a return goes


class DelayedMessages:
    """The waiting messages, by time, then id."""

    __slots__ = ("_waiting", "_waiting_bytes")

    def __init__(self) -> None:
        self._waiting: list[tuple[int, int, ReadyMessage, Destination]] = []  # (not_before, id, ...)
        self._waiting_bytes = 0

    def wait(self, message: ReadyMessage, not_before: int, destination: Destination) -> None:
        """Keep `message` until `not_before`."""
        heapq.heappush(self._waiting, (not_before, message.id, message, destination))
        self._waiting_bytes += message.size

    def come_due(self, now_ms: int) -> list[tuple[ReadyMessage, Destination]]:
        """Take the messages whose time came by `now_ms`, earliest first, with where each goes."""
        released = []
        while self._waiting and self._waiting[0][0] <= now_ms:
            _, _, message, destination = heapq.heappop(self._waiting)
            self._waiting_bytes -= message.size
            released.append((message, destination))
        return released

    def next_due_ms(self) -> int | None:
        """When the earliest waiting message comes due."""
        return self._waiting[0][0] if self._waiting else None

    def __len__(self) -> int:
        return len(self._waiting)

    @property
    def total_bytes(self) -> int:
        return self._waiting_bytes

    def lowest(self) -> tuple[int, int] | None:
        """(priority, id) of the waiting message drop-head takes first: the lowest priority, then the
        oldest (a scan: for the overflow path only)."""
        return min(((entry[2].priority, entry[1]) for entry in self._waiting), default=None)

    def pop_waiting(self, message_id: int) -> ReadyMessage:
        """Take the waiting message `message_id` out before its time (a scan: for the overflow path)."""
        index = next(i for i, entry in enumerate(self._waiting) if entry[1] == message_id)
        entry = self._waiting.pop(index)
        heapq.heapify(self._waiting)
        self._waiting_bytes -= entry[2].size
        return entry[2]

    def __iter__(self) -> Iterator[ReadyMessage]:
        """The waiting messages (in no particular order)."""
        return (entry[2] for entry in self._waiting)

    def clear(self) -> list[int]:
        """Remove every waiting message; returns their ids."""
        ids = [entry[1] for entry in self._waiting]
        self._waiting, self._waiting_bytes = [], 0
        return ids

    def to_wire(self, width: int, due: Iterable[ReadyMessage]) -> list[list[int]]:
        """Snapshot rows: a waiting message's first `width` fields, its time and destination; a `due` one's
        (a published message whose time came, now ready) fields, -1 and -1."""
        rows = [[*entry[2][:width], entry[0], int(entry[3])] for entry in self._waiting]
        return rows + [[*message[:width], -1, -1] for message in due]

    def extend_from_wire(self, rows: list[list[int]]) -> list[ReadyMessage]:
        """Restore the waiting messages of snapshot rows written by `to_wire`; returns the due ones."""
        due = []
        for *fields, not_before, destination in rows:
            message = ReadyMessage.of_wire(fields)
            if destination < 0:
                due.append(message)
            else:
                self.wait(message, not_before, Destination(destination))
        return due
