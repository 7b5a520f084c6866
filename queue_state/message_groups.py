"""Ordered message groups (`x-message-groups`, queue operations version 13): SQS FIFO's MessageGroupId,
Artemis's JMSXGroupID. A grouped queue hands out at most one unsettled message of a group at a time, in
the group's order, and different groups in parallel.

The ready messages of a grouped queue that name a group live here, not among `ReadyMessages`: a FIFO per
group, so a long group that waits for its head to be settled costs nothing to skip. A group is blocked
while one of its messages is out (held by a consumer, or back from one and waiting for a delay): that
message is its blocker. A group that is not blocked and has a ready message waits its turn in the ring
of its head's priority; taking its head blocks it, and it joins the back of a ring again only once the
blocker is settled, dead-lettered, or back at its head, so groups take turns and none starves another.
Priorities order the heads of groups, never the messages within one.

A group's name is interned: a message carries its group's number (`ReadyMessage.group`; 0, NO_GROUP,
for none), and the name is kept once, for as long as a message of the group is in the queue anywhere
(ready, out or waiting). Only heads expire and are dropped by length limits, as in `ReadyMessages`; two
heaps of heads find the next to expire and the oldest of the lowest priority, their entries checked
against the heads when read. Nothing here reads a clock or depends on the order of a hash.
"""

from __future__ import annotations

import heapq
import itertools
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from queue_state.arguments import SHORT_TEXT_BYTES, short_text_problem
from queue_state.messages import NO_EXPIRY, ReadyMessage, TakeLimit, Window

NO_GROUP = 0
"""The group number of a message without a group (or of a queue without groups)."""
MAX_GROUP_BYTES = SHORT_TEXT_BYTES
"""The longest group name, in UTF-8 bytes (AMQP's short string)."""
_COMPACT_AFTER = 32


def group_name_problem(name: object) -> str | None:
    """Why `name` cannot name a group (AMQP's short string, not empty: 1 to MAX_GROUP_BYTES bytes of
    UTF-8), or None when it can."""
    return short_text_problem(name) or (None if name else "must not be empty")


class _GroupFifo:
    """One group's ready messages in group order, consumed from a moving head."""

    __slots__ = ("_head", "_items")

    def __init__(self) -> None:
        self._items: list[ReadyMessage] = []
        self._head = 0

    def __len__(self) -> int:
        return len(self._items) - self._head

    def __iter__(self) -> Iterator[ReadyMessage]:
        return iter(self._items[self._head :])

    def first(self) -> ReadyMessage:
        return self._items[self._head]

    def append(self, message: ReadyMessage) -> None:
        self._items.append(message)

    def append_left(self, message: ReadyMessage) -> None:
        if self._head:
            self._head -= 1
            self._items[self._head] = message
        else:
            self._items.insert(0, message)

    def insert_by_id(self, message: ReadyMessage) -> None:
        """Before the first message with a higher id (a scan of the group)."""
        items = self._items
        at = next((i for i in range(self._head, len(items)) if items[i].id > message.id), len(items))
        items.insert(at, message)

    def pop_left(self) -> ReadyMessage:
        message = self._items[self._head]
        self._head += 1
        if self._head >= _COMPACT_AFTER and self._head * 2 >= len(self._items):
            del self._items[: self._head]
            self._head = 0
        return message


class MessageGroups:
    """A grouped queue's ready messages that name a group, its groups' names and its blocked groups."""

    __slots__ = (
        "_blocked",
        "_by_age",
        "_by_expiry",
        "_by_priority",
        "_bytes",
        "_count",
        "_fifos",
        "_level_of",
        "_live",
        "_names",
        "_next_number",
        "_rings",
        "_texts",
    )

    def __init__(self) -> None:
        self._names: dict[str, int] = {}
        self._texts: dict[int, str] = {}
        self._live: dict[int, int] = {}  # group -> its messages in the queue, wherever they are
        self._next_number = NO_GROUP + 1
        self._fifos: dict[int, _GroupFifo] = {}  # only groups with a ready message
        self._blocked: dict[int, int] = {}  # group -> the id of the message out that blocks it
        self._rings: dict[int, OrderedDict[int, None]] = {}  # priority -> groups waiting their turn
        self._level_of: dict[int, int] = {}  # group -> the priority of the ring it waits in
        self._by_expiry: list[tuple[int, int, int]] = []  # (expires_at, id, group) of heads, a heap
        self._by_age: list[tuple[int, int, int]] = []  # (priority, id, group) of heads, a heap
        self._by_priority: dict[int, int] = {}
        self._count = 0
        self._bytes = 0

    # names

    def enter(self, name: str) -> int:
        """The number of group `name` for a message entering the queue (a new number for a new name)."""
        number = self._names.get(name)
        if number is None:
            number = self._names[name] = self._next_number
            self._texts[number] = name
            self._next_number += 1
        self._live[number] = self._live.get(number, 0) + 1
        return number

    def leave(self, message: ReadyMessage) -> None:
        """`message` left the queue for good (settled, dead-lettered, dropped, purged): its group is no
        longer blocked if it was the blocker, and its name is let go with its group's last message."""
        group = message.group
        if group == NO_GROUP:
            return
        if self._blocked.get(group) == message.id:
            del self._blocked[group]
            self._place(group)
        left = self._live[group] - 1
        if left:
            self._live[group] = left
        else:
            del self._live[group], self._names[self._texts.pop(group)]

    def name(self, group: int) -> str:
        return self._texts[group]

    @property
    def groups(self) -> int:
        """How many groups have a message in the queue."""
        return len(self._live)

    @property
    def blocked(self) -> int:
        """How many groups have a message out."""
        return len(self._blocked)

    def blocker(self, group: int) -> int | None:
        """The id of the message out that blocks `group`, if one does."""
        return self._blocked.get(group)

    # adding ready messages

    def push(self, message: ReadyMessage) -> None:
        """A new message at the tail of its group."""
        self._add(message)
        fifo = self._fifos.get(message.group)
        if fifo is None:
            fifo = self._fifos[message.group] = _GroupFifo()
            fifo.append(message)
            self._head_changed(message.group)
        else:
            fifo.append(message)

    def push_due(self, message: ReadyMessage) -> None:
        """A published message whose time came: among its group by id."""
        self._add(message)
        fifo = self._fifos.setdefault(message.group, _GroupFifo())
        fifo.insert_by_id(message)
        if fifo.first() is message:
            self._head_changed(message.group)

    def push_returned(self, message: ReadyMessage) -> None:
        """The blocker back from its holder, ready again: at the head of its group, which it no longer
        blocks (it goes to the back of its ring)."""
        self._add(message)
        self._fifos.setdefault(message.group, _GroupFifo()).append_left(message)
        if self._blocked.get(message.group) == message.id:
            del self._blocked[message.group]
        self._head_changed(message.group)

    def _add(self, message: ReadyMessage) -> None:
        self._count += 1
        self._bytes += message.size
        self._by_priority[message.priority] = self._by_priority.get(message.priority, 0) + 1

    # serving

    def __len__(self) -> int:
        return self._count

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def head(self) -> ReadyMessage | None:
        """The message `pop` takes: the head of the group whose turn it is at the highest priority."""
        ring = self._top_ring()
        return None if ring is None else self._fifos[next(iter(ring))].first()

    def pop(self) -> ReadyMessage:
        """Take the head of the group whose turn it is at the highest priority, blocking the group (there
        must be one)."""
        ring = self._top_ring()
        if ring is None:
            raise IndexError("no group's turn")
        group = next(iter(ring))
        self._unring(group)
        self._blocked[group] = self._fifos[group].first().id
        return self._pop_head(group)

    def take_in(self, window: Window, limit: TakeLimit) -> list[ReadyMessage]:
        """Take the heads in `window` of the groups whose turn it is, as `limit` admits, in turn order (the
        highest priority first), blocking each; the other groups keep their turn (a scan of the ring)."""
        since_ms, until_ms, end_id = window
        taken: list[ReadyMessage] = []
        for priority in sorted(self._rings, reverse=True):
            for group in list(self._rings[priority]):
                head = self._fifos[group].first()
                if not (since_ms <= head.enqueued_at <= until_ms and head.id < end_id):
                    continue
                if not limit.admits(head.size):
                    return taken
                limit.take(head.size)
                self._unring(group)
                self._blocked[group] = head.id
                taken.append(self._pop_head(group))
        return taken

    def _top_ring(self) -> OrderedDict[int, None] | None:
        return self._rings[max(self._rings)] if self._rings else None

    # expiry and length limits: heads only

    def expire_heads(self, now_ms: int) -> list[ReadyMessage]:
        """Remove the heads of groups that expired before `now_ms`, and the heads that follow them that
        did too."""
        expired = []
        heap = self._by_expiry
        while heap and heap[0][0] < now_ms:
            _, message_id, group = heapq.heappop(heap)
            if self._is_head(message_id, group):
                expired.append(self._pop_head(group))
        return expired

    def head_expires_at(self) -> int:
        """The earliest expiry among the groups' heads."""
        self._drop_stale(self._by_expiry)
        return self._by_expiry[0][0] if self._by_expiry else NO_EXPIRY

    def lowest(self) -> tuple[int, int] | None:
        """(priority, id) of the head drop-head takes first: the lowest priority, then the oldest."""
        self._drop_stale(self._by_age)
        return self._by_age[0][:2] if self._by_age else None

    def pop_lowest(self) -> ReadyMessage:
        """Take the head `lowest` names (there must be one)."""
        self._drop_stale(self._by_age)
        return self._pop_head(self._by_age[0][2])

    def _is_head(self, message_id: int, group: int) -> bool:
        fifo = self._fifos.get(group)
        return fifo is not None and fifo.first().id == message_id

    def _drop_stale(self, heap: list[tuple[int, int, int]]) -> None:
        while heap and not self._is_head(heap[0][1], heap[0][2]):
            heapq.heappop(heap)

    # reading

    def __iter__(self) -> Iterator[ReadyMessage]:
        """Every grouped ready message: `heads`, then `behind_heads`."""
        yield from self.heads()
        yield from self.behind_heads()

    def heads(self) -> Iterator[ReadyMessage]:
        """The heads of the groups whose turn it is, in the order `pop` would take them were none
        settled (the highest priority first, then turn order)."""
        for group in self._in_turn():
            yield self._fifos[group].first()

    def behind_heads(self) -> Iterator[ReadyMessage]:
        """The grouped ready messages `heads` leaves out: those behind the heads of the groups whose turn
        it is, in turn order, then the blocked groups' in the order they first had a ready message; each
        group's in group order."""
        for group in self._in_turn():
            yield from itertools.islice(self._fifos[group], 1, None)
        for group in self._fifos:
            if group not in self._level_of:
                yield from self._fifos[group]

    def _in_turn(self) -> list[int]:
        return [group for priority in sorted(self._rings, reverse=True) for group in self._rings[priority]]

    def between(self, first_id: int, end_id: int) -> list[ReadyMessage]:
        """The messages with ids from `first_id` to below `end_id` (a scan; in no particular order)."""
        return [message for message in self if first_id <= message.id < end_id]

    def counts(self) -> dict[int, int]:
        """How many ready messages each priority level holds here."""
        return dict(self._by_priority)

    def clear(self) -> list[ReadyMessage]:
        """Remove every ready message (`__iter__` order); the groups stay blocked as they were."""
        messages = list(self)
        self._fifos.clear()
        self._rings.clear()
        self._level_of.clear()
        self._by_expiry.clear()
        self._by_age.clear()
        self._by_priority.clear()
        self._count = self._bytes = 0
        return messages

    # keeping the rings and heaps

    def _pop_head(self, group: int) -> ReadyMessage:
        fifo = self._fifos[group]
        message = fifo.pop_left()
        self._count -= 1
        self._bytes -= message.size
        left = self._by_priority[message.priority] - 1
        if left:
            self._by_priority[message.priority] = left
        else:
            del self._by_priority[message.priority]
        if not fifo:
            del self._fifos[group]
        self._head_changed(group)
        return message

    def _head_changed(self, group: int) -> None:
        """Note `group`'s new head in the heaps and put the group where its head and block say."""
        fifo = self._fifos.get(group)
        if fifo is not None:
            head = fifo.first()
            if head.expires_at != NO_EXPIRY:
                heapq.heappush(self._by_expiry, (head.expires_at, head.id, group))
            heapq.heappush(self._by_age, (head.priority, head.id, group))
            if len(self._by_age) + len(self._by_expiry) > 4 * len(self._fifos) + 128:
                self._rebuild_heaps()  # let go of the entries of heads long gone
        self._place(group)

    def _place(self, group: int) -> None:
        """Put `group` in the ring of its head's priority when it has a ready message and is not
        blocked (it keeps its turn if it waits there already), out of every ring otherwise."""
        fifo = self._fifos.get(group)
        level = None if fifo is None or group in self._blocked else fifo.first().priority
        if self._level_of.get(group) == level:
            return
        self._unring(group)
        if level is not None:
            self._rings.setdefault(level, OrderedDict())[group] = None
            self._level_of[group] = level

    def _unring(self, group: int) -> None:
        level = self._level_of.pop(group, None)
        if level is not None:
            ring = self._rings[level]
            del ring[group]
            if not ring:
                del self._rings[level]

    def _rebuild_heaps(self) -> None:
        heads = [(group, fifo.first()) for group, fifo in self._fifos.items()]
        self._by_expiry = [(m.expires_at, m.id, g) for g, m in heads if m.expires_at != NO_EXPIRY]
        self._by_age = [(m.priority, m.id, g) for g, m in heads]
        heapq.heapify(self._by_expiry)
        heapq.heapify(self._by_age)

    # snapshots

    def to_wire(self, rows_per_chunk: int) -> Iterator[list[Any]]:
        """The `groups` chunks' payloads: `["names", [[number, name, live], ...]]` slices (in the order the
        names came), `["messages", [row, ...]]` slices (each group's ready messages in group order, the
        groups in the order they first had one; a row is a message's eight fields, its group last), then
        `["state", [next_number, [[group, blocker id], ...], [[priority, [group, ...]], ...]]]`: the
        blocked groups, and each ring in turn order."""
        names = [[number, name, self._live[number]] for number, name in self._texts.items()]
        for start in range(0, len(names), rows_per_chunk):
            yield ["names", names[start : start + rows_per_chunk]]
        rows = [list(message) for fifo in self._fifos.values() for message in fifo]
        for start in range(0, len(rows), rows_per_chunk):
            yield ["messages", rows[start : start + rows_per_chunk]]
        blocked = [[group, message_id] for group, message_id in self._blocked.items()]
        rings = [[priority, list(ring)] for priority, ring in self._rings.items()]
        yield ["state", [self._next_number, blocked, rings]]

    def extend_from_wire(self, part: str, payload: list[Any]) -> None:
        """Restore one `to_wire` payload (call `restored` after the last)."""
        if part == "names":
            for number, name, live in payload:
                self._names[name], self._texts[number], self._live[number] = number, name, live
        elif part == "messages":
            for row in payload:
                message = ReadyMessage.of_wire(row)
                self._add(message)
                self._fifos.setdefault(message.group, _GroupFifo()).append(message)
        elif part == "state":
            self._next_number, blocked, rings = payload
            self._blocked = {group: message_id for group, message_id in blocked}
            for priority, groups in rings:
                self._rings[priority] = OrderedDict.fromkeys(groups)
                self._level_of.update(dict.fromkeys(groups, priority))
        else:
            raise ValueError(f"unknown groups part {part!r}")

    def restored(self) -> None:
        """Rebuild what a snapshot leaves out (the heaps of heads) once every part is restored."""
        self._rebuild_heaps()
