"""Per-message metadata and the compact FIFO that holds ready messages.

The state keeps no bodies: a message is seven integers. Ready messages, the bulk of a long queue, are
stored column-wise in typed arrays (about 41 bytes each) rather than as Python objects (~200 bytes); a
FIFO holds one priority level, so the priority costs its ready messages nothing.
"""

from __future__ import annotations

import heapq
import itertools
import sys
from array import array
from collections.abc import Iterator
from typing import NamedTuple

from queue_state.arguments import INT64_MAX
from queue_state.effects import Delivery

NO_EXPIRY = 2**63 - 1
_COMPACT_AFTER = 4096


class ReadyMessage(NamedTuple):
    """A message's metadata; `expires_at` is `NO_EXPIRY` when it has no TTL.

    `delivery_count` counts the hand-outs that failed, `acquired` every hand-out that ended in a return
    (so, while the message is held, the hand-outs before this one): both only grow when it comes back.
    `priority` is its level (0 to `MAX_PRIORITY`, as the queue took it); `group` the number of its group on
    a queue with message groups (`queue_state/message_groups.py`), 0 for none."""

    id: int
    size: int
    enqueued_at: int
    expires_at: int
    delivery_count: int
    acquired: int
    priority: int = 0
    group: int = 0

    @classmethod
    def of_wire(cls, values: list[int]) -> ReadyMessage:
        """A message from its snapshot row: eight integers (a grouped queue's, snapshot version 12), the
        seven of snapshots without groups, the six of snapshots before priorities (level 0), or the five
        of snapshots before the acquired count, which was then equal to the delivery count (every return
        counted as a failure)."""
        if len(values) == 5:
            values = [*values, values[4]]
        id_, size, enqueued_at, expires_at, delivery_count, acquired, *rest = values
        if len(rest) > 2:
            raise ValueError(f"a message row has {len(values)} fields")
        return cls(id_, size, enqueued_at, expires_at, delivery_count, acquired, *rest)

    def delivery(self) -> Delivery:
        return Delivery(
            self.id, self.delivery_count, self.acquired > 0, self.enqueued_at, self.acquired, self.priority
        )

    def returned(self, failed: bool) -> ReadyMessage:
        """The message back from a holder: one more acquisition, and one more failure when `failed`."""
        return self._replace(delivery_count=self.delivery_count + failed, acquired=self.acquired + 1)


class HeldMessage(NamedTuple):
    """A checked-out message and when it was handed out (for the lease)."""

    message: ReadyMessage
    since_ms: int


Window = tuple[int, int, int]
"""Which messages a take from a window may remove: `(since_ms, until_ms, end_id)`, those enqueued from
`since_ms` to `until_ms` (both inclusive) with an id below `end_id`."""


def since_window(since_ms: int | None) -> Window | None:
    """The window of the messages enqueued at or after `since_ms` (None without one: serve order)."""
    return None if since_ms is None else (since_ms, INT64_MAX, INT64_MAX)


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
    """A FIFO of ready messages of one `priority` in six parallel typed arrays, consumed from a moving
    head."""

    __slots__ = (
        "_acquired",
        "_bytes",
        "_counts",
        "_enqueued",
        "_expires",
        "_head",
        "_ids",
        "_sizes",
        "priority",
    )

    def __init__(self, priority: int = 0) -> None:
        self.priority = priority
        self._reset()

    def _reset(self) -> None:
        self._ids = array("q")
        self._sizes = array("q")
        self._enqueued = array("q")
        self._expires = array("q")
        self._counts = array("i")
        self._acquired = array("i")
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
        self._acquired.append(message.acquired)
        self._bytes += message.size

    def push_new(self, first_id: int, sizes: list[int], enqueued_at: int, expires: list[int]) -> None:
        """Append a batch of fresh messages with consecutive ids."""
        count = len(sizes)
        self._ids.extend(range(first_id, first_id + count))
        self._sizes.extend(sizes)
        self._enqueued.extend([enqueued_at] * count)
        self._expires.extend(expires)
        zeros = [0] * count
        self._counts.extend(zeros)
        self._acquired.extend(zeros)
        self._bytes += sum(sizes)

    def head_expires_at(self) -> int:
        return self._expires[self._head] if len(self._ids) > self._head else NO_EXPIRY

    def pop(self) -> ReadyMessage:
        head = self._head
        message = self._row(head)
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
                self._acquired[head:stop],
                itertools.repeat(self.priority),
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
        return [self._row(i) for i in range(self._head, len(self._ids)) if first_id <= self._ids[i] < end_id]

    def at(self, index: int) -> ReadyMessage:
        """The message `index` places behind the head (0: the head; it must be below `len`)."""
        return self._row(self._head + index)

    def run_below(self, message_id: int, limit: int) -> int:
        """How many messages in a row from the head, `limit` at most, have ids below `message_id` (a
        FIFO's ids need not ascend: a return may go to its tail)."""
        ids, start = self._ids, self._head
        end = min(len(ids), start + limit)
        stop = start
        while stop < end and ids[stop] < message_id:
            stop += 1
        return stop - start

    def head_size(self) -> int:
        """The body size of the message at the head (the FIFO must not be empty)."""
        return self._sizes[self._head]

    def head_id(self) -> int:
        """The id of the message at the head (the FIFO must not be empty)."""
        return self._ids[self._head]

    def merge_by_id(self, messages: list[ReadyMessage]) -> None:
        """Put `messages` (lowest id first) where taking the lower id of the two heads each time would
        serve them (a rebuild, linear in the FIFO's length: not for the delivery hot path)."""
        merged = list(heapq.merge(self, messages, key=lambda message: message.id))
        self._reset()
        for message in merged:
            self.push(message)

    def take_in(self, window: Window, limit: TakeLimit) -> list[ReadyMessage]:
        """Remove and return, in queue order, the messages of `window` that `limit` admits, up to the
        first it does not.

        The others stay in place. This scans the columns (linear in the queue's length) and cuts each
        run of taken rows out of them, which suits readers from a time and redrive tasks, not the
        delivery hot path.
        """
        if limit.count <= 0:
            return []
        self._compact()
        picked: list[int] = []
        since_ms, until_ms, end_id = window
        ids = self._ids
        for i, at in enumerate(self._enqueued):
            if since_ms <= at <= until_ms and ids[i] < end_id:
                if not limit.admits(self._sizes[i]):
                    break
                limit.take(self._sizes[i])
                picked.append(i)
        columns = self._columns()
        taken = [self._row(i) for i in picked]
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
        head = self._head
        yield from map(
            ReadyMessage,
            self._ids[head:],
            self._sizes[head:],
            self._enqueued[head:],
            self._expires[head:],
            self._counts[head:],
            self._acquired[head:],
            itertools.repeat(self.priority),
        )

    def _row(self, i: int) -> ReadyMessage:
        """The message in row `i` of the columns."""
        return ReadyMessage(
            self._ids[i],
            self._sizes[i],
            self._enqueued[i],
            self._expires[i],
            self._counts[i],
            self._acquired[i],
            self.priority,
        )

    def acquired_is_delivery_count(self) -> bool:
        """True when every message's acquired count equals its delivery count (as every message's did
        before plain returns: a snapshot without the acquired column then loses nothing)."""
        return self._acquired[self._head :] == self._counts[self._head :]

    def column_chunks(self, rows_per_chunk: int, with_acquired: bool = True) -> Iterator[list[bytes]]:
        """The queue's columns as little-endian bytes, `rows_per_chunk` messages at a time; without the
        acquired column (the five of snapshots before it) unless `with_acquired`."""
        columns = self._columns() if with_acquired else self._columns()[:5]
        for start in range(self._head, len(self._ids), rows_per_chunk):
            yield [_little_endian(column[start : start + rows_per_chunk]) for column in columns]

    def extend_from_columns(self, chunk: list[bytes]) -> None:
        """Append messages from one `column_chunks` item (five columns: acquired = delivery count)."""
        if len(chunk) == 5:
            chunk = [*chunk, chunk[4]]
        columns = self._columns()
        if len(chunk) != len(columns):
            raise ValueError(f"snapshot chunk has {len(chunk)} columns")
        read = [
            _from_little_endian(column.typecode, data) for column, data in zip(columns, chunk, strict=True)
        ]
        if len({len(values) for values in read}) != 1:
            raise ValueError("snapshot columns differ in length")
        for column, values in zip(columns, read, strict=True):
            column.extend(values)
        self._bytes += sum(read[1])

    def _columns(self) -> tuple[array[int], ...]:
        """The columns in row order: id, size, enqueued_at, expires_at, delivery count, acquired."""
        return (self._ids, self._sizes, self._enqueued, self._expires, self._counts, self._acquired)

    def _compact(self) -> None:
        head = self._head
        for column in self._columns():
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
