"""Per-message metadata and the compact FIFO that holds ready messages.

The state keeps no bodies: a message is five integers. Ready messages, the bulk of a long queue, are
stored column-wise in typed arrays (about 40 bytes each) rather than as Python objects (~200 bytes).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator
from typing import NamedTuple

from queue_state.effects import Delivery

NO_EXPIRY = 2**63 - 1
_COMPACT_AFTER = 4096


class ReadyMessage(NamedTuple):
    """A message's metadata; `expires_at` is `NO_EXPIRY` when it has no TTL."""

    id: int
    size: int
    enqueued_at: int
    expires_at: int
    delivery_count: int

    def delivery(self) -> Delivery:
        return Delivery(self.id, self.delivery_count, self.delivery_count > 0, self.enqueued_at)

    def failed_once_more(self) -> ReadyMessage:
        return self._replace(delivery_count=self.delivery_count + 1)


class HeldMessage(NamedTuple):
    """A checked-out message and when it was handed out (for the lease)."""

    message: ReadyMessage
    since_ms: int


class TakeLimit:
    """How many more messages one command may take, and how many bytes of body; the first one it takes
    always fits, however large."""

    __slots__ = ("bytes_left", "count", "taken")

    def __init__(self, count: int, max_bytes: int | None = None) -> None:
        self.count = count
        self.bytes_left = max_bytes
        self.taken = 0

    def admits(self, size: int) -> bool:
        """Whether a message of `size` bytes may be taken next."""
        if self.count <= 0:
            return False
        return self.bytes_left is None or self.taken == 0 or size <= self.bytes_left

    def take(self, size: int) -> None:
        self.count -= 1
        self.taken += 1
        if self.bytes_left is not None:
            self.bytes_left -= size


class MessageFifo:
    """A FIFO of ready messages in five parallel typed arrays, consumed from a moving head."""

    __slots__ = ("_bytes", "_counts", "_enqueued", "_expires", "_head", "_ids", "_sizes")

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._ids = array("q")
        self._sizes = array("q")
        self._enqueued = array("q")
        self._expires = array("q")
        self._counts = array("i")
        self._head = 0
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._ids) - self._head

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def push(self, message: ReadyMessage) -> None:
        self._ids.append(message.id)
        self._sizes.append(message.size)
        self._enqueued.append(message.enqueued_at)
        self._expires.append(message.expires_at)
        self._counts.append(message.delivery_count)
        self._bytes += message.size

    def push_new(self, first_id: int, sizes: list[int], enqueued_at: int, expires: list[int]) -> None:
        """Append a batch of fresh messages with consecutive ids."""
        count = len(sizes)
        self._ids.extend(range(first_id, first_id + count))
        self._sizes.extend(sizes)
        self._enqueued.extend([enqueued_at] * count)
        self._expires.extend(expires)
        self._counts.extend([0] * count)
        self._bytes += sum(sizes)

    def head_expires_at(self) -> int:
        return self._expires[self._head] if len(self._ids) > self._head else NO_EXPIRY

    def pop(self) -> ReadyMessage:
        head = self._head
        message = ReadyMessage(
            self._ids[head], self._sizes[head], self._enqueued[head], self._expires[head], self._counts[head]
        )
        self._bytes -= message.size
        self._move_head(head + 1)
        return message

    def pop_unexpired(self, limit: int, now_ms: int) -> list[ReadyMessage]:
        """Up to `limit` messages from the head, stopping before the first that expired before `now_ms`."""
        head = self._head
        end = min(len(self._ids), head + limit)
        stop = head
        expires = self._expires
        while stop < end and expires[stop] >= now_ms:
            stop += 1
        messages = list(
            map(
                ReadyMessage,
                self._ids[head:stop],
                self._sizes[head:stop],
                self._enqueued[head:stop],
                expires[head:stop],
                self._counts[head:stop],
            )
        )
        self._bytes -= sum(self._sizes[head:stop])
        self._move_head(stop)
        return messages

    def _move_head(self, head: int) -> None:
        """The messages before `head` left; the columns shed them once they are half the rows."""
        self._head = head
        if head >= _COMPACT_AFTER and head * 2 >= len(self._ids):
            self._compact()

    def between(self, first_id: int, end_id: int) -> list[ReadyMessage]:
        """The messages with ids from `first_id` to below `end_id`, in queue order (nothing moves).

        This scans the ids (linear in the queue's length): for browsing a queue, not for delivering."""
        columns = (self._ids, self._sizes, self._enqueued, self._expires, self._counts)
        return [
            ReadyMessage(*(column[i] for column in columns))
            for i in range(self._head, len(self._ids))
            if first_id <= self._ids[i] < end_id
        ]

    def at(self, index: int) -> ReadyMessage:
        """The message `index` places behind the head (0: the head; it must be below `len`)."""
        i = self._head + index
        return ReadyMessage(
            self._ids[i], self._sizes[i], self._enqueued[i], self._expires[i], self._counts[i]
        )

    def head_size(self) -> int:
        """The body size of the message at the head (the FIFO must not be empty)."""
        return self._sizes[self._head]

    def take_since(self, since_ms: int, limit: TakeLimit) -> list[ReadyMessage]:
        """Remove and return, in queue order, the messages enqueued at or after `since_ms` that `limit`
        admits, up to the first it does not.

        Older messages stay in place. This scans the columns (linear in the queue's length) and cuts
        each run of taken rows out of them, which suits a reader from a time, not the delivery hot path.
        """
        if limit.count <= 0:
            return []
        self._compact()
        picked: list[int] = []
        for i, at in enumerate(self._enqueued):
            if at >= since_ms:
                if not limit.admits(self._sizes[i]):
                    break
                limit.take(self._sizes[i])
                picked.append(i)
        columns = (self._ids, self._sizes, self._enqueued, self._expires, self._counts)
        taken = [ReadyMessage(*(column[i] for column in columns)) for i in picked]
        for start, stop in reversed(_runs(picked)):
            for column in columns:
                del column[start:stop]
        self._bytes -= sum(message.size for message in taken)
        return taken

    def clear(self) -> list[int]:
        """Remove every message; return their ids in queue order."""
        ids = self._ids[self._head :].tolist()
        self._reset()
        return ids

    def __iter__(self) -> Iterator[ReadyMessage]:
        columns = (self._ids, self._sizes, self._enqueued, self._expires, self._counts)
        for row in zip(*(column[self._head :] for column in columns), strict=True):
            yield ReadyMessage(*row)

    def column_chunks(self, rows_per_chunk: int) -> Iterator[list[bytes]]:
        """The queue's columns as little-endian bytes, `rows_per_chunk` messages at a time."""
        columns = (self._ids, self._sizes, self._enqueued, self._expires, self._counts)
        for start in range(self._head, len(self._ids), rows_per_chunk):
            yield [_little_endian(column[start : start + rows_per_chunk]) for column in columns]

    def extend_from_columns(self, chunk: list[bytes]) -> None:
        """Append messages from one `column_chunks` item."""
        ids, sizes, enqueued, expires, counts = (
            _from_little_endian(column.typecode, data)
            for column, data in zip(
                (self._ids, self._sizes, self._enqueued, self._expires, self._counts), chunk, strict=True
            )
        )
        if not len(ids) == len(sizes) == len(enqueued) == len(expires) == len(counts):
            raise ValueError("snapshot columns differ in length")
        self._ids.extend(ids)
        self._sizes.extend(sizes)
        self._enqueued.extend(enqueued)
        self._expires.extend(expires)
        self._counts.extend(counts)
        self._bytes += sum(sizes)

    def _compact(self) -> None:
        head = self._head
        for column in (self._ids, self._sizes, self._enqueued, self._expires, self._counts):
            del column[:head]
        self._head = 0


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Ascending indices as (start, stop) ranges of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def _little_endian(column: array[int]) -> bytes:
    if sys.byteorder == "big":
        column = array(column.typecode, column)
        column.byteswap()
    return column.tobytes()


def _from_little_endian(typecode: str, data: bytes) -> array[int]:
    column = array(typecode)
    column.frombytes(data)
    if sys.byteorder == "big":
        column.byteswap()
    return column
