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
for none), and the group is kept once, one record with its name, for as long as a message of it is in
the queue anywhere (ready, out or waiting). Only heads expire and are dropped by length limits, as in
`ReadyMessages`; two heaps of heads find the next to expire and the oldest of the lowest priority,
their entries checked against the heads when read. Nothing here reads a clock or depends on the order
of a hash.
"""

from __future__ import annotations

import heapq
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


class _Group:
    """One group with a message in the queue: its name, how many of its messages the queue holds
    wherever they are, its ready messages in group order (consumed from a moving head), the id of the
    message out that blocks it, and the priority of the ring it waits its turn in."""

    __slots__ = ("blocker", "head", "items", "level", "live", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.live = 0
        self.items: list[ReadyMessage] = []
        self.head = 0
        self.blocker: int | None = None
        self.level: int | None = None

    def ready(self) -> int:
        return len(self.items) - self.head

    def first(self) -> ReadyMessage:
        return self.items[self.head]

    def waiting(self) -> list[ReadyMessage]:
        return self.items[self.head :]

    def append_left(self, message: ReadyMessage) -> None:
        if self.head:
            self.head -= 1
            self.items[self.head] = message
        else:
            self.items.insert(0, message)

    def pop_left(self) -> ReadyMessage:
        message = self.items[self.head]
        self.head += 1
        if self.head >= _COMPACT_AFTER and self.head * 2 >= len(self.items):
            del self.items[: self.head]
            self.head = 0
        elif self.head == len(self.items):
            self.items, self.head = [], 0
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
        "_groups",
        "_names",
        "_next_number",
        "_rings",
    )

    def __init__(self) -> None:
        self._names: dict[str, int] = {}
        self._groups: dict[int, _Group] = {}  # the groups with a message in the queue, by number
        self._next_number = NO_GROUP + 1
        self._blocked = 0
        self._rings: dict[int, OrderedDict[int, None]] = {}  # priority -> groups waiting their turn
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
            self._groups[number] = _Group(name)
            self._next_number += 1
        self._groups[number].live += 1
        return number

    def leave(self, message: ReadyMessage) -> None:
        """`message` left the queue for good (settled, dead-lettered, dropped, purged): its group is no
        longer blocked if it was the blocker, and the group is let go with its last message."""
        if message.group == NO_GROUP:
            return
        group = self._groups[message.group]
        if group.blocker == message.id:
            self._unblock(message.group)
        group.live -= 1
        if not group.live:
            del self._groups[message.group], self._names[group.name]

    @property
    def groups(self) -> int:
        """How many groups have a message in the queue."""
        return len(self._groups)

    @property
    def blocked(self) -> int:
        """How many groups have a message out."""
        return self._blocked

    def _block(self, number: int, message_id: int) -> None:
        self._groups[number].blocker = message_id
        self._blocked += 1
        self._unring(number)

    def _unblock(self, number: int) -> None:
        self._groups[number].blocker = None
        self._blocked -= 1
        self._place(number)

    # adding ready messages

    def push(self, message: ReadyMessage) -> None:
        """A new message at the tail of its group."""
        self._add(message)
        group = self._groups[message.group]
        group.items.append(message)
        if group.ready() == 1:
            self._head_changed(message.group)

    def push_returned(self, message: ReadyMessage) -> None:
        """The blocker back from its holder, ready again: at the head of its group, which it no longer
        blocks (it goes to the back of its ring)."""
        self._add(message)
        group = self._groups[message.group]
        group.append_left(message)
        if group.blocker == message.id:
            group.blocker = None
            self._blocked -= 1
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
        return None if ring is None else self._groups[next(iter(ring))].first()

    def pop(self) -> ReadyMessage:
        """Take the head of the group whose turn it is at the highest priority, blocking the group (there
        must be one)."""
        ring = self._top_ring()
        if ring is None:
            raise IndexError("no group's turn")
        number = next(iter(ring))
        self._block(number, self._groups[number].first().id)
        return self._pop_head(number)

    def take_in(self, window: Window, limit: TakeLimit) -> list[ReadyMessage]:
        """Take the heads in `window` of the groups whose turn it is, as `limit` admits, in turn order (the
        highest priority first), blocking each; the other groups keep their turn (a scan of the ring)."""
        since_ms, until_ms, end_id = window
        taken: list[ReadyMessage] = []
        for number in list(self._in_turn()):  # taking a head takes its group out of its ring
            head = self._groups[number].first()
            if not (since_ms <= head.enqueued_at <= until_ms and head.id < end_id):
                continue
            if not limit.admits(head.size):
                break
            limit.take(head.size)
            self._block(number, head.id)
            taken.append(self._pop_head(number))
        return taken

    def _top_ring(self) -> OrderedDict[int, None] | None:
        return self._rings[max(self._rings)] if self._rings else None

    def _in_turn(self) -> Iterator[int]:
        """The groups whose turn it is, the highest priority first, then in turn order: read as far as
        needed (a peek or a get's fit reads the first few of many groups), so a caller that changes the
        rings meanwhile takes a list of it first."""
        for priority in sorted(self._rings, reverse=True):
            yield from self._rings[priority]

    # expiry and length limits: heads only

    def expire_heads(self, now_ms: int) -> list[ReadyMessage]:
        """Remove the heads of groups that expired before `now_ms`, and the heads that follow them that
        did too."""
        expired = []
        heap = self._by_expiry
        while heap and heap[0][0] < now_ms:
            _, message_id, number = heapq.heappop(heap)
            if self._is_head(message_id, number):
                expired.append(self._pop_head(number))
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

    def _is_head(self, message_id: int, number: int) -> bool:
        group = self._groups.get(number)
        return group is not None and group.ready() > 0 and group.first().id == message_id

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
        for number in self._in_turn():
            yield self._groups[number].first()

    def behind_heads(self) -> Iterator[ReadyMessage]:
        """The grouped ready messages `heads` leaves out: those behind the heads of the groups whose turn
        it is, in turn order, then the blocked groups' in the order the groups came; each group's in
        group order."""
        for number in self._in_turn():
            yield from self._groups[number].waiting()[1:]
        for group in self._groups.values():
            if group.level is None:
                yield from group.waiting()

    def between(self, first_id: int, end_id: int) -> list[ReadyMessage]:
        """The messages with ids from `first_id` to below `end_id` (a scan; in no particular order)."""
        return [message for message in self if first_id <= message.id < end_id]

    def counts(self) -> dict[int, int]:
        """How many ready messages each priority level holds here."""
        return dict(self._by_priority)

    def clear(self) -> list[ReadyMessage]:
        """Remove every ready message (`__iter__` order); the groups stay blocked as they were."""
        messages = list(self)
        for group in self._groups.values():
            group.items, group.head, group.level = [], 0, None
        self._rings.clear()
        self._by_expiry.clear()
        self._by_age.clear()
        self._by_priority.clear()
        self._count = self._bytes = 0
        return messages

    # keeping the rings and heaps

    def _pop_head(self, number: int) -> ReadyMessage:
        message = self._groups[number].pop_left()
        self._count -= 1
        self._bytes -= message.size
        left = self._by_priority[message.priority] - 1
        if left:
            self._by_priority[message.priority] = left
        else:
            del self._by_priority[message.priority]
        self._head_changed(number)
        return message

    def _head_changed(self, number: int) -> None:
        """Note group `number`'s new head in the heaps and put the group where its head and block say."""
        group = self._groups[number]
        if group.ready():
            head = group.first()
            if head.expires_at != NO_EXPIRY:
                heapq.heappush(self._by_expiry, (head.expires_at, head.id, number))
            heapq.heappush(self._by_age, (head.priority, head.id, number))
            if len(self._by_age) + len(self._by_expiry) > 4 * len(self._groups) + 128:
                self._rebuild_heaps()  # let go of the entries of heads long gone
        self._place(number)

    def _place(self, number: int) -> None:
        """Put group `number` in the ring of its head's priority when it has a ready message and is not
        blocked (it keeps its turn if it waits there already), out of every ring otherwise."""
        group = self._groups[number]
        level = group.first().priority if group.ready() and group.blocker is None else None
        if group.level == level:
            return
        self._unring(number)
        if level is not None:
            self._rings.setdefault(level, OrderedDict())[number] = None
            group.level = level

    def _unring(self, number: int) -> None:
        group = self._groups[number]
        if group.level is not None:
            ring = self._rings[group.level]
            del ring[number]
            if not ring:
                del self._rings[group.level]
            group.level = None

    def _rebuild_heaps(self) -> None:
        heads = [(number, group.first()) for number, group in self._groups.items() if group.ready()]
        self._by_expiry = [(m.expires_at, m.id, g) for g, m in heads if m.expires_at != NO_EXPIRY]
        self._by_age = [(m.priority, m.id, g) for g, m in heads]
        heapq.heapify(self._by_expiry)
        heapq.heapify(self._by_age)

    # snapshots

    def to_wire(self, rows_per_chunk: int) -> Iterator[list[Any]]:
        """The `groups` chunks' payloads: `["names", [[number, name, live], ...]]` slices (in the order the
        groups came), `["messages", [row, ...]]` slices (each group's ready messages in group order, the
        groups in that order; a row is a message's eight fields, its group last), then `["state",
        [next_number, [[group, blocker id], ...], [[priority, [group, ...]], ...]]]`: the blocked
        groups, and each ring in turn order."""
        names = [[number, group.name, group.live] for number, group in self._groups.items()]
        for start in range(0, len(names), rows_per_chunk):
            yield ["names", names[start : start + rows_per_chunk]]
        rows = [list(message) for group in self._groups.values() for message in group.waiting()]
        for start in range(0, len(rows), rows_per_chunk):
            yield ["messages", rows[start : start + rows_per_chunk]]
        blocked = [
            [number, group.blocker] for number, group in self._groups.items() if group.blocker is not None
        ]
        rings = [[priority, list(ring)] for priority, ring in self._rings.items()]
        yield ["state", [self._next_number, blocked, rings]]

    def extend_from_wire(self, part: str, payload: list[Any]) -> None:
        """Restore one `to_wire` payload (call `restored` after the last)."""
        if part == "names":
            for number, name, live in payload:
                group = self._groups[number] = _Group(name)
                group.live, self._names[name] = live, number
        elif part == "messages":
            for row in payload:
                message = ReadyMessage.of_wire(row)
                self._add(message)
                self._groups[message.group].items.append(message)
        elif part == "state":
            self._next_number, blocked, rings = payload
            for number, message_id in blocked:
                self._groups[number].blocker = message_id
            self._blocked = len(blocked)
            for priority, numbers in rings:
                self._rings[priority] = OrderedDict.fromkeys(numbers)
                for number in numbers:
                    self._groups[number].level = priority
        else:
            raise ValueError(f"unknown groups part {part!r}")

    def restored(self) -> None:
        """Rebuild what a snapshot leaves out (the heaps of heads) once every part is restored."""
        self._rebuild_heaps()
