"""Durable consumers: holders whose checkouts are numbered by a per-consumer delivery sequence.

A durable consumer (a Spark query) takes ready messages explicitly, never by credit. Each message it
takes gets the next number of its sequence; a range of numbers can be read again, unchanged, for as
long as the messages stay checked out, and `settle_below(end)` releases every number below `end`.
Its messages never time out (no lease, no ConsumerDown); cancelling it returns them to the queue.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from queue_state.consumers import Holder
from queue_state.effects import Delivery
from queue_state.messages import HeldMessage


class DurableLogGap(LookupError):
    """Part of a requested sequence range is no longer (or not yet) checked out to the consumer."""


@dataclass(frozen=True, slots=True)
class DurableInfo:
    """A durable consumer as seen from outside: settled below `settled`, handed out below `end`."""

    name: str
    settled: int
    end: int
    unacknowledged: int


class DurableHolder(Holder):
    """A durable consumer's checked-out messages, numbered in checkout order."""

    __slots__ = ("id_of_seq", "next_seq", "seq_of_id", "settled_below")

    def __init__(self, name: str, next_seq: int = 0, settled_below: int = 0) -> None:
        super().__init__(name)
        self.next_seq = next_seq
        self.settled_below = settled_below
        self.id_of_seq: dict[int, int] = {}
        self.seq_of_id: dict[int, int] = {}

    def number(self, message_id: int, seq: int | None = None) -> int:
        """Give a just-held message the next sequence number (or `seq`, when restoring)."""
        if seq is None:
            seq = self.next_seq
        self.next_seq = max(self.next_seq, seq + 1)
        self.id_of_seq[seq] = message_id
        self.seq_of_id[message_id] = seq
        return seq

    def take(self, message_id: int) -> HeldMessage:
        del self.id_of_seq[self.seq_of_id.pop(message_id)]
        return super().take(message_id)

    def ids_below(self, end: int) -> list[int]:
        """Ids of held messages numbered below `end` (sequence order equals checkout order)."""
        ids = []
        for seq, message_id in self.id_of_seq.items():
            if seq >= end:
                break
            ids.append(message_id)
        return ids

    def read(self, start: int, end: int) -> list[tuple[int, Delivery]]:
        """The deliveries numbered `start` to `end - 1`; raises DurableLogGap if any is not held."""
        if not self.settled_below <= start <= end <= self.next_seq:
            raise DurableLogGap(
                f"range [{start}, {end}) of consumer {self.name!r} is outside its unsettled "
                f"sequence [{self.settled_below}, {self.next_seq})"
            )
        rows = []
        for seq in range(start, end):
            message_id = self.id_of_seq.get(seq)
            if message_id is None:
                raise DurableLogGap(f"delivery {seq} of consumer {self.name!r} is no longer checked out")
            rows.append((seq, self.held[message_id].message.delivery()))
        return rows

    def numbered(self) -> Iterator[tuple[int, HeldMessage]]:
        """(sequence number, held message) in checkout order."""
        for seq, message_id in self.id_of_seq.items():
            yield seq, self.held[message_id]

    def info(self) -> DurableInfo:
        return DurableInfo(self.name, self.settled_below, self.next_seq, len(self.held))
