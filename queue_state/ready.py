"""The ready messages of a queue by priority level: the highest level in use is served first, and
within a level returned messages first, then published ones in id order.

A level holds its `returns` and its `main` FIFO plus its `due` published messages (ones that waited for a
time and take their place among `main` by id: FIFO among never-delivered messages of a level). Level 0
always exists; another from its first message until the serve step finds it empty, so a queue without
priorities pays for one level and takes a short path through it.
Nothing here reads a clock: the caller says what time it is.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator

from queue_state.messages import NO_EXPIRY, MessageFifo, ReadyMessage, TakeLimit, Window


class _Level:
    """One priority's ready messages."""

    __slots__ = ("due", "due_bytes", "main", "returns")

    def __init__(self, priority: int) -> None:
        self.returns = MessageFifo(priority)
        self.main = MessageFifo(priority)
        self.due: list[tuple[int, ReadyMessage]] = []  # (id, message), a heap
        self.due_bytes = 0

    def __len__(self) -> int:
        return len(self.returns) + len(self.main) + len(self.due)

    def __bool__(self) -> bool:
        return bool(self.returns) or bool(self.main) or bool(self.due)

    @property
    def total_bytes(self) -> int:
        return self.returns.total_bytes + self.main.total_bytes + self.due_bytes

    def _next_is_due(self) -> bool:
        """True when the next message is a due one: no return waits and its id comes before main's head."""
        return not self.returns and bool(self.due) and (not self.main or self.due[0][0] < self.main.head_id())

    def pop(self) -> ReadyMessage:
        if self._next_is_due():
            return self._pop_due()
        return self.returns.pop() if self.returns else self.main.pop()

    def _pop_due(self) -> ReadyMessage:
        _, message = heapq.heappop(self.due)
        self.due_bytes -= message.size
        return message

    def head(self) -> ReadyMessage:
        if self._next_is_due():
            return self.due[0][1]
        return (self.returns or self.main).at(0)

    def head_size(self) -> int:
        if self._next_is_due():
            return self.due[0][1].size
        return (self.returns or self.main).head_size()

    def head_id(self) -> int:
        if self._next_is_due():
            return self.due[0][0]
        return (self.returns or self.main).head_id()

    def pop_run(self, count: int, now_ms: int) -> list[ReadyMessage]:
        """Up to `count` messages in serve order, stopping before one that expired before `now_ms`: from
        returns, else from main up to the first due message's id, else that due message."""
        if self.returns or not self.due:
            return (self.returns or self.main).pop_unexpired(count, now_ms)
        below = self.main.run_below(self.due[0][0], count)
        if below:
            return self.main.pop_unexpired(below, now_ms)
        return [self._pop_due()]

    def expire_heads(self, now_ms: int, expired: list[ReadyMessage]) -> None:
        """Move the messages at the heads that expired before `now_ms` to `expired`."""
        for fifo in (self.returns, self.main):
            while fifo.head_expires_at() < now_ms:
                expired.append(fifo.pop())
        while self.due and self.due[0][1].expires_at < now_ms:
            expired.append(self._pop_due())

    def head_expires_at(self) -> int:
        due = self.due[0][1].expires_at if self.due else NO_EXPIRY
        return min(self.returns.head_expires_at(), self.main.head_expires_at(), due)

    def merge_due(self) -> None:
        """Put the due messages into main by id (a rebuild: not for the delivery hot path)."""
        if self.due:
            self.main.merge_by_id(self.due_in_order())
            self.due, self.due_bytes = [], 0

    def due_in_order(self) -> list[ReadyMessage]:
        return [message for _, message in sorted(self.due)]

    def __iter__(self) -> Iterator[ReadyMessage]:
        yield from self.returns
        yield from heapq.merge(self.main, self.due_in_order(), key=lambda message: message.id)


class ReadyMessages:
    """Every ready message of a queue, by priority level."""

    __slots__ = ("_levels", "_only_zero", "_order", "_zero")

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._zero = _Level(0)
        self._levels: dict[int, _Level] = {0: self._zero}
        self._order = [0]  # the levels' priorities, highest first
        self._only_zero = True  # the short path: no level but 0

    def _level(self, priority: int) -> _Level:
        level = self._levels.get(priority)
        if level is None:
            level = self._levels[priority] = _Level(priority)
            self._reorder()
        return level

    def _top(self) -> _Level | None:
        """The highest level holding messages; levels found empty on the way are let go (but level 0)."""
        if self._only_zero:
            return self._zero if self._zero else None
        for priority in self._order:
            level = self._levels[priority]
            if level:
                return level
            if priority:
                del self._levels[priority]
                self._reorder()
        return None

    def _reorder(self) -> None:
        self._order = sorted(self._levels, reverse=True)
        self._only_zero = len(self._order) == 1

    def _in_use(self) -> list[_Level]:
        """The levels holding messages, highest first."""
        return [level for level in (self._levels[p] for p in self._order) if level]

    # adding

    def push_new(
        self,
        first_id: int,
        sizes: list[int],
        enqueued_at: int,
        expires: list[int],
        priorities: list[int] | None,
    ) -> None:
        """A batch of fresh messages with consecutive ids, each at the end of its level's main (all at
        level 0 when `priorities` is None)."""
        if priorities is None:
            self._levels[0].main.push_new(first_id, sizes, enqueued_at, expires)
            return
        start = 0
        for end in range(1, len(sizes) + 1):
            if end == len(sizes) or priorities[end] != priorities[start]:
                main = self._level(priorities[start]).main
                main.push_new(first_id + start, sizes[start:end], enqueued_at, expires[start:end])
                start = end

    def push(self, message: ReadyMessage) -> None:
        """`message` at the end of its level's main."""
        self._level(message.priority).main.push(message)

    def push_return(self, message: ReadyMessage) -> None:
        """`message` at the end of its level's returns."""
        self._level(message.priority).returns.push(message)

    def push_due(self, message: ReadyMessage) -> None:
        """A published message whose time came: among its level's main by id."""
        level = self._level(message.priority)
        heapq.heappush(level.due, (message.id, message))
        level.due_bytes += message.size

    # serving

    def __bool__(self) -> bool:
        return self._top() is not None

    def __len__(self) -> int:
        if self._only_zero:
            return len(self._zero)
        return sum(len(level) for level in self._levels.values())

    @property
    def total_bytes(self) -> int:
        if self._only_zero:
            return self._zero.total_bytes
        return sum(level.total_bytes for level in self._levels.values())

    def _top_level(self) -> _Level:
        level = self._top()
        if level is None:
            raise IndexError("no ready message")
        return level

    def head(self) -> ReadyMessage | None:
        """The message served next, if any."""
        level = self._top()
        return None if level is None else level.head()

    def pop(self) -> ReadyMessage:
        """Take the message served next (there must be one)."""
        return self._top_level().pop()

    def pop_run(self, count: int, now_ms: int) -> list[ReadyMessage]:
        """Up to `count` messages of the highest level in serve order, none expired before `now_ms`."""
        return self._top_level().pop_run(count, now_ms)

    def expire_heads(self, now_ms: int) -> list[ReadyMessage]:
        """Remove the messages at every level's heads that expired before `now_ms`."""
        expired: list[ReadyMessage] = []
        self._expire_into(now_ms, expired)
        return expired

    def _expire_into(self, now_ms: int, expired: list[ReadyMessage]) -> None:
        if self._only_zero:
            self._zero.expire_heads(now_ms, expired)
            return
        for priority in self._order:  # in level order, not creation order: a restored replica's differs
            self._levels[priority].expire_heads(now_ms, expired)

    def take(self, limit: TakeLimit, now_ms: int, expired: list[ReadyMessage]) -> list[ReadyMessage]:
        """Remove the messages `limit` admits in serve order, each time moving the messages at the heads
        that expired before `now_ms` to `expired` (the heads must not be expired to begin with)."""
        taken = []
        while (level := self._top()) is not None and limit.admits(level.head_size()):
            message = level.pop()
            limit.take(message.size)
            taken.append(message)
            self._expire_into(now_ms, expired)
        return taken

    def head_expires_at(self) -> int:
        """The earliest expiry among every level's heads."""
        if self._only_zero:
            return self._zero.head_expires_at()
        return min((level.head_expires_at() for level in self._in_use()), default=NO_EXPIRY)

    def lowest(self) -> tuple[int, int] | None:
        """(priority, id) of what drop-head takes from the ready messages: the next one of the lowest
        level; None when there is none."""
        if self._only_zero:
            return (0, self._zero.head_id()) if self._zero else None
        for priority in reversed(self._order):
            level = self._levels[priority]
            if level:
                return priority, level.head_id()
        return None

    def pop_lowest(self) -> ReadyMessage:
        """Take the next message of the lowest level holding one (there must be one)."""
        if self._only_zero:
            return self._zero.pop()
        return next(level for level in reversed(self._in_use())).pop()

    def take_in(self, window: Window, limit: TakeLimit) -> list[ReadyMessage]:
        """Remove the messages of `window` that `limit` admits, in serve order, the others staying where
        they are (a scan: for readers from a time and redrive tasks)."""
        taken = []
        for level in self._in_use():
            level.merge_due()  # due ones take their place in main, as serving them would
            taken += level.returns.take_in(window, limit)
            taken += level.main.take_in(window, limit)
        return taken

    # reading

    def __iter__(self) -> Iterator[ReadyMessage]:
        """Every ready message in serve order."""
        for level in self._in_use():
            yield from level

    def at(self, index: int) -> ReadyMessage | None:
        """The message `index` places from the next one in serve order, or None past the last."""
        for level in self._in_use():
            if index >= len(level):
                index -= len(level)
            elif level.due and index >= len(level.returns):  # due messages merge with main by id
                return next(itertools.islice(level, index, None))
            elif index < len(level.returns):
                return level.returns.at(index)
            else:
                return level.main.at(index - len(level.returns))
        return None

    def between(self, first_id: int, end_id: int) -> list[ReadyMessage]:
        """The messages with ids from `first_id` to below `end_id` (a scan; in no particular order)."""
        found: list[ReadyMessage] = []
        for level in self._in_use():
            found += level.returns.between(first_id, end_id) + level.main.between(first_id, end_id)
            found += [message for message_id, message in level.due if first_id <= message_id < end_id]
        return found

    def counts(self) -> dict[int, int]:
        """How many ready messages each level in use holds, highest first."""
        if self._only_zero:
            count = len(self._zero)
            return {0: count} if count else {}
        return {level.main.priority: len(level) for level in self._in_use()}

    def clear(self) -> list[int]:
        """Remove every ready message; their ids, level by level (each level's returns, main, due)."""
        ids = []
        for level in self._in_use():
            ids += level.returns.clear() + level.main.clear() + [message_id for message_id, _ in level.due]
        self._reset()
        return ids

    def acquired_is_delivery_count(self) -> bool:
        """True when every ready message's acquired count equals its delivery count."""
        return all(
            level.returns.acquired_is_delivery_count()
            and level.main.acquired_is_delivery_count()
            and all(message.acquired == message.delivery_count for _, message in level.due)
            for level in self._levels.values()
        )

    def only_level_zero(self) -> bool:
        """True when no level but 0 holds a message."""
        return all(level.main.priority == 0 for level in self._in_use())

    # snapshots

    def column_chunks(self, rows_per_chunk: int, width: int) -> Iterator[tuple[int, str, list[bytes]]]:
        """(priority, "returns" or "main", columns) of each level's FIFOs, `rows_per_chunk` messages at a
        time, the first `width` columns (5 without the acquired count); due messages are not in them."""
        for level in self._in_use():
            for kind, fifo in (("returns", level.returns), ("main", level.main)):
                for columns in fifo.column_chunks(rows_per_chunk, width > 5):
                    yield fifo.priority, kind, columns

    def extend_from_columns(self, priority: int, kind: str, columns: list[bytes]) -> None:
        """Append one `column_chunks` item."""
        level = self._level(priority)
        (level.returns if kind == "returns" else level.main).extend_from_columns(columns)

    def due_messages(self) -> Iterable[ReadyMessage]:
        """Every due published message, level by level (the highest first), each level's in heap order."""
        return (message for priority in self._order for _, message in self._levels[priority].due)
