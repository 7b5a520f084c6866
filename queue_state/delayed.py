"""Delayed messages: those waiting for a time before they are ready (a delayed retry, a nack's delay, a
publish's delay), and the published ones whose time came, which take their place among ready messages
by id (FIFO among never-delivered messages: a consumer gets the oldest first).

A returned message whose time comes goes back where a return goes then (`returns`, or `main`'s tail
without a delivery limit: the machine decides); a published one joins `due`, a heap by id that the serve
step merges with `main`. Nothing here reads a clock: the machine says what time it is.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from enum import IntEnum

from queue_state.messages import NO_EXPIRY, ReadyMessage


class Destination(IntEnum):
    """Where a delayed message goes when its time comes."""

    PUBLISHED = 0  # `due`: among ready messages by id
    RETURNED = 1  # where a return goes


class DelayedMessages:
    """The waiting messages (by time, then id) and the due published ones (by id)."""

    __slots__ = ("_due", "_due_bytes", "_waiting", "_waiting_bytes")

    def __init__(self) -> None:
        self._waiting: list[tuple[int, int, ReadyMessage, Destination]] = []  # (not_before, id, ...)
        self._due: list[tuple[int, ReadyMessage]] = []  # (id, message)
        self._waiting_bytes = 0
        self._due_bytes = 0

    def wait(self, message: ReadyMessage, not_before: int, destination: Destination) -> None:
        """Keep `message` until `not_before`."""
        heapq.heappush(self._waiting, (not_before, message.id, message, destination))
        self._waiting_bytes += message.size

    def come_due(self, now_ms: int) -> list[ReadyMessage]:
        """The returned messages whose time came by `now_ms`, earliest first; the published ones whose
        time came join `due` instead."""
        released: list[ReadyMessage] = []
        while self._waiting and self._waiting[0][0] <= now_ms:
            _, message_id, message, destination = heapq.heappop(self._waiting)
            self._waiting_bytes -= message.size
            if destination is Destination.PUBLISHED:
                heapq.heappush(self._due, (message_id, message))
                self._due_bytes += message.size
            else:
                released.append(message)
        return released

    def next_due_ms(self) -> int | None:
        """When the earliest waiting message comes due."""
        return self._waiting[0][0] if self._waiting else None

    @property
    def waiting_count(self) -> int:
        return len(self._waiting)

    @property
    def waiting_bytes(self) -> int:
        return self._waiting_bytes

    # the due published messages, merged with `main` by id

    def __len__(self) -> int:
        """How many due published messages there are (ready ones)."""
        return len(self._due)

    @property
    def due_bytes(self) -> int:
        return self._due_bytes

    def head(self) -> ReadyMessage:
        """The due message with the lowest id (there must be one)."""
        return self._due[0][1]

    def head_expires_at(self) -> int:
        return self._due[0][1].expires_at if self._due else NO_EXPIRY

    def pop(self) -> ReadyMessage:
        """Take the due message with the lowest id."""
        _, message = heapq.heappop(self._due)
        self._due_bytes -= message.size
        return message

    def pop_all_due(self) -> list[ReadyMessage]:
        """Take every due message, lowest id first."""
        due = self.due_in_order()
        self._due, self._due_bytes = [], 0
        return due

    def lowest_waiting_id(self) -> int | None:
        """The lowest id among the waiting messages (a scan: for the overflow path only)."""
        return min((entry[1] for entry in self._waiting), default=None)

    def pop_waiting(self, message_id: int) -> ReadyMessage:
        """Take the waiting message `message_id` out before its time (a scan: for the overflow path)."""
        index = next(i for i, entry in enumerate(self._waiting) if entry[1] == message_id)
        entry = self._waiting.pop(index)
        heapq.heapify(self._waiting)
        self._waiting_bytes -= entry[2].size
        return entry[2]

    def waiting(self) -> Iterator[ReadyMessage]:
        """The waiting messages (in no particular order)."""
        return (entry[2] for entry in self._waiting)

    def due_in_order(self) -> list[ReadyMessage]:
        """The due messages, lowest id first (a copy: nothing moves)."""
        return [message for _, message in sorted(self._due)]

    def clear(self) -> list[int]:
        """Remove every delayed message, waiting or due; returns their ids."""
        ids = [entry[1] for entry in self._waiting] + [entry[0] for entry in self._due]
        self._waiting, self._due = [], []
        self._waiting_bytes = self._due_bytes = 0
        return ids

    def messages(self) -> Iterator[ReadyMessage]:
        """Every delayed message, waiting or due (in no particular order)."""
        yield from (entry[2] for entry in self._waiting)
        yield from (entry[1] for entry in self._due)

    def to_wire(self) -> list[list[int]]:
        """Snapshot rows: a waiting message's six fields, its time and destination; a due one's six
        fields, -1 and -1."""
        rows = [[*entry[2], entry[0], int(entry[3])] for entry in self._waiting]
        return rows + [[*entry[1], -1, -1] for entry in self._due]

    def extend_from_wire(self, rows: list[list[int]]) -> None:
        """Restore snapshot rows written by `to_wire`."""
        for *fields, not_before, destination in rows:
            message = ReadyMessage.of_wire(fields)
            if destination < 0:
                heapq.heappush(self._due, (message.id, message))
                self._due_bytes += message.size
            else:
                self.wait(message, not_before, Destination(destination))
