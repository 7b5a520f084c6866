"""Message bodies of one queue replica.

A body is written once: it stays inside the committed log entry that enqueued it, and `LoggedBodies`
says where. When the log is compacted, entries that still hold queued messages are kept below the
compaction point, unless few of their messages are left: those bodies are copied to a record of their
own (`b<id>` in the group's application key space) and the entry goes. Bodies that arrive in a leader's
snapshot are stored as such records too. See docs/decisions/0003-bodies-in-the-log.md.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import msgpack

from cluster.queues.queue_results import MessageRow
from cluster.replication.entry_codec import entry_body_spans, record_span
from cluster.replication.stored_message import BodySpan, StoredMessage
from queue_state.effects import Delivery
from raft_log.storage.node_store import GroupLog

_ID = struct.Struct(">Q")
BODY_PREFIX = b"b"
READ_ENTRY_BYTES = 16 * 1024 * 1024
"""How much data the newest entries read for bodies (or applied with bodies) may hold in memory."""


class _Identified(Protocol):
    @property
    def id(self) -> int: ...


M = TypeVar("M", bound=_Identified)


def body_key(message_id: int) -> bytes:
    """The application key of a body stored as a record of its own."""
    return BODY_PREFIX + _ID.pack(message_id)


def body_id(key: bytes) -> int:
    """The message id a body record's key names."""
    return _ID.unpack(key[len(BODY_PREFIX) :])[0]


@dataclass(slots=True)
class LoggedBodies:
    """The messages one committed entry enqueued (ids `first_id` .. `first_id + count - 1`), whose bodies
    are still read from that entry."""

    index: int
    first_id: int
    count: int
    op_first_ids: list[int]  # the first id each enqueueing operation got, ascending
    op_positions: list[int]  # that operation's position among the entry's operations
    forgotten: bytearray  # one bit per message, set once its body is no longer needed

    @property
    def live(self) -> int:
        """How many of these bodies are still needed."""
        return self.count - int.from_bytes(self.forgotten, "little").bit_count()

    def is_forgotten(self, message_id: int) -> bool:
        """Whether the body of `message_id` (one of these) was forgotten."""
        offset = message_id - self.first_id
        return bool(self.forgotten[offset >> 3] & (1 << (offset & 7)))

    def forget(self, message_id: int) -> None:
        """Mark one of these bodies as no longer needed (again: no effect)."""
        offset = message_id - self.first_id
        self.forgotten[offset >> 3] |= 1 << (offset & 7)

    def live_ids(self) -> Iterator[int]:
        """The ids whose bodies are still needed."""
        return (i for i in range(self.first_id, self.first_id + self.count) if not self.is_forgotten(i))

    def to_wire(self) -> list:
        """This record as a snapshot carries it."""
        forgotten = bytes(self.forgotten)
        return [self.index, self.first_id, self.count, self.op_first_ids, self.op_positions, forgotten]

    @classmethod
    def from_wire(cls, wire: list) -> LoggedBodies:
        """A record from `to_wire`."""
        index, first_id, count, op_first_ids, op_positions, forgotten = wire
        return cls(index, first_id, count, list(op_first_ids), list(op_positions), bytearray(forgotten))


@dataclass(slots=True)
class _ReadEntry:
    """An entry's data held for reading bodies: the bodies are views into it, where `spans` (found at
    the first read) says."""

    data: bytes
    view: memoryview
    spans: list[BodySpan] | None = None  # by message, in id order

    @classmethod
    def of(cls, data: bytes) -> _ReadEntry:
        """An entry's data, where no body was looked for yet."""
        return cls(data, memoryview(data))


class BodyStore:
    """Bodies by message id: read from the log entries that carried them, or from their own records.

    A body read back is a `memoryview` into the entry (or record) that holds it, not a copy: only where
    each body lies is found in an entry, nothing else of it is decoded."""

    def __init__(self, group_log: GroupLog) -> None:
        self._log = group_log
        self._logged: list[LoggedBodies] = []  # ascending by first_id (and so by entry index)
        self._first_ids: list[int] = []
        self._read: OrderedDict[int, _ReadEntry] = OrderedDict()  # entry index -> its data
        self._read_bytes = 0

    # -- applying entries ---------------------------------------------------------------------------

    def entry_applied(self, index: int, data: bytes) -> None:
        """The data of the entry at `index`, which enqueued messages: later body reads of them use it while
        it is among the newest, rather than reading it back from the log."""
        self._hold(index, _ReadEntry.of(data))

    def logged(self, index: int, op_position: int, first_id: int, count: int) -> None:
        """Operation `op_position` of the entry at `index` enqueued ids `first_id` .. `+ count - 1`; their
        bodies are that operation's."""
        if count == 0:
            return
        last = self._logged[-1] if self._logged else None
        if last is not None and last.index == index:
            if first_id != last.first_id + last.count:  # a body is found at its id's offset in the entry
                raise ValueError(f"ids from {first_id} do not follow those of entry {index}'s earlier ones")
            last.op_first_ids.append(first_id)
            last.op_positions.append(op_position)
            grown = last.count + count
            last.forgotten.extend(bytes((grown + 7) // 8 - len(last.forgotten)))
            last.count = grown
            return
        if last is not None and first_id < last.first_id + last.count:
            raise ValueError(f"ids from {first_id} are not after those of entry {last.index}")
        forgotten = bytearray((count + 7) // 8)
        self._logged.append(LoggedBodies(index, first_id, count, [first_id], [op_position], forgotten))
        self._first_ids.append(first_id)

    def forget(self, ids: Iterable[int]) -> None:
        """Forget bodies for good (ids of one entry in a row look the entry up once)."""
        logged: LoggedBodies | None = None
        for message_id in ids:
            if logged is None or not logged.first_id <= message_id < logged.first_id + logged.count:
                logged = self._logged_of(message_id)
                if logged is None:
                    self._log.app_delete(body_key(message_id))
                    continue
            logged.forget(message_id)

    # -- reading ----------------------------------------------------------------------------------

    def get(self, message_id: int) -> StoredMessage | None:
        """A body, or None when it is not stored."""
        return self.get_many((message_id,))[0]

    def get_many(self, ids: Iterable[int]) -> list[StoredMessage | None]:
        """The bodies of `ids` in order, None for any not stored (one pass for a batch of deliveries)."""
        return [None if at is None else _message(*at) for at in self._located(ids)]

    def with_bodies(self, items: Sequence[M]) -> list[tuple[M, StoredMessage]]:
        """`items` (deliveries: anything with a message `id`) paired with their bodies, leaving out any
        whose body is no longer stored."""
        found = self.get_many(item.id for item in items)
        return [(item, stored) for item, stored in zip(items, found, strict=True) if stored is not None]

    def rows(self, deliveries: Sequence[Delivery], max_bytes: int | None = None) -> list[MessageRow]:
        """`deliveries` with their bodies, leaving out any whose body is no longer stored (`with_bodies`
        made into rows, without a `StoredMessage` between); with `max_bytes`, the first of them while
        their bodies add up to at most that (the first one always), the others not read."""
        rows: list[MessageRow] = []
        left = max_bytes
        for delivery, at in zip(deliveries, self._located(d.id for d in deliveries), strict=True):
            if at is None:
                continue
            data, (body_at, body_end, headers_end, encoding) = at
            if left is not None:
                if rows and body_end - body_at > left:
                    break
                left -= body_end - body_at
            rows.append(
                MessageRow(
                    delivery.id,
                    data[body_at:body_end],
                    encoding,
                    {} if headers_end - body_end == 1 else _headers(data, body_end, headers_end),
                    delivery.delivery_count,
                    delivery.redelivered,
                    delivery.enqueued_at_ms,
                    None,
                    delivery.acquired_count,
                    delivery.priority,
                )
            )
        return rows

    def _located(self, ids: Iterable[int]) -> Iterator[tuple[memoryview, BodySpan] | None]:
        """Where the body of each of `ids` lies (the buffer holding it and its span), None for any not
        stored; ids of one entry in a row look the entry up once."""
        logged: LoggedBodies | None = None
        spans: list[BodySpan] = []
        view = memoryview(b"")
        for message_id in ids:
            if logged is None or not logged.first_id <= message_id < logged.first_id + logged.count:
                logged = self._logged_of(message_id)
                if logged is None:
                    value = self._log.app_get(body_key(message_id))
                    yield None if value is None else (memoryview(value), record_span(value))
                    continue
                view, spans = self._entry_spans(logged)
            if logged.is_forgotten(message_id):
                yield None
            else:
                yield view, spans[message_id - logged.first_id]

    # -- compaction and snapshots -------------------------------------------------------------------

    def release_log(self, index: int) -> list[int]:
        """The log is about to be compacted up to `index`: the entries to keep for their bodies.

        An entry with no body left goes; one with fewer than half of its bodies left has them copied
        to records of their own and goes too, so kept entries are at least half live. Entries are
        dropped only here, in the same write as the snapshot that stops naming them."""
        first_index = self._log.first_index()
        keep: list[int] = []
        remaining: list[LoggedBodies] = []
        for logged in self._logged:
            if logged.index > index:
                remaining.append(logged)
            elif logged.live * 2 >= logged.count:
                remaining.append(logged)
                keep.append(logged.index)
            else:
                self._copy_out(logged)
                if logged.index < first_index:
                    self._log.drop_kept(logged.index)
        self._logged = remaining
        self._first_ids = [logged.first_id for logged in remaining]
        return keep

    def snapshot_state(self) -> list:
        """Where the bodies of the log are, for a local snapshot (the log itself stays on this node)."""
        return [logged.to_wire() for logged in self._logged]

    def restore_state(self, state: list) -> None:
        """Take up a local snapshot's `snapshot_state` (the entries it names are in this node's log)."""
        self._logged = [LoggedBodies.from_wire(wire) for wire in state]
        self._first_ids = [logged.first_id for logged in self._logged]
        self._read.clear()
        self._read_bytes = 0

    def exported_items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every body still needed as a (key, record) pair, for a follower that gets a snapshot instead of
        the log."""
        yield from self._log.app_items(BODY_PREFIX)
        for logged in self._logged:
            yield from self._records(logged)

    def replace_all(self, items: Iterable[tuple[bytes, bytes]], below_id: int) -> None:
        """Drop every body and store these records instead, those with ids below `below_id` (installing a
        leader's snapshot: the log that follows it brings the later ones)."""
        for key, _ in list(self._log.app_items(BODY_PREFIX)):
            self._log.app_delete(key)
        for key, value in items:
            if body_id(key) < below_id:
                self._log.app_put(key, value)
        self.restore_state([])

    # -- internals ------------------------------------------------------------------------------

    def _logged_of(self, message_id: int) -> LoggedBodies | None:
        at = bisect_right(self._first_ids, message_id) - 1
        if at < 0:
            return None
        logged = self._logged[at]
        return logged if message_id < logged.first_id + logged.count else None

    def _entry_spans(self, logged: LoggedBodies) -> tuple[memoryview, list[BodySpan]]:
        """The data of the entry `logged` names and where each of its bodies lies in it, by message id
        from `first_id` on (the entry read from the log when it is not among the newest)."""
        read = self._read.get(logged.index)
        if read is None:
            read = _ReadEntry.of(self._log.kept_entry(logged.index).data)
            self._hold(logged.index, read)
        else:
            self._read.move_to_end(logged.index)
        if read.spans is None or len(read.spans) != logged.count:
            by_op = entry_body_spans(read.data)
            read.spans = [span for position in logged.op_positions for span in _op_spans(by_op, position)]
        return read.view, read.spans

    def _hold(self, index: int, read: _ReadEntry) -> None:
        self._read[index] = read
        self._read_bytes += len(read.data)
        while self._read_bytes > READ_ENTRY_BYTES and len(self._read) > 1:
            _, dropped = self._read.popitem(last=False)
            self._read_bytes -= len(dropped.data)

    def _copy_out(self, logged: LoggedBodies) -> None:
        for key, record in self._records(logged):
            self._log.app_put(key, record)

    def _records(self, logged: LoggedBodies) -> Iterator[tuple[bytes, bytes]]:
        """The still-needed bodies of `logged` as (key, record) pairs, as records of their own store them."""
        ids = list(logged.live_ids())
        for message_id, stored in zip(ids, self.get_many(ids), strict=True):
            if stored is None:  # a live id of an entry still indexed: never, unless the index is wrong
                raise ValueError(f"live message {message_id} of entry {logged.index} has no body to copy")
            yield body_key(message_id), msgpack.packb([stored.body, stored.headers, stored.encoding])


def _op_spans(by_op: list[list[BodySpan] | None], position: int) -> list[BodySpan]:
    spans = by_op[position] if position < len(by_op) else None
    if spans is None:
        raise ValueError(f"no bodies at operation {position} of the entry")
    return spans


def _message(data: memoryview, span: BodySpan) -> StoredMessage:
    """The message `span` places in `data`: its body a view into it."""
    body_at, body_end, headers_end, encoding = span
    return StoredMessage(data[body_at:body_end], _headers(data, body_end, headers_end), encoding)


def _headers(data: memoryview, at: int, end: int) -> dict[str, Any]:
    """The headers map packed in `data` from `at` to `end` (one byte: the empty map, which `rows` also
    makes itself, saving a call per message)."""
    if end - at == 1:
        return {}
    headers: dict[str, Any] = msgpack.unpackb(data[at:end], raw=False)
    return headers
