"""Raft messages between the replicas of a group, and their msgpack wire format.

One TCP connection per node pair carries every group, so each message names its group.
`decode_message` faces the network: it raises only `MessageDecodeError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import msgpack

from raft_log.errors import MessageDecodeError
from raft_log.msgpack_parts import array_header, bin_header
from raft_log.types import ConfState, Entry, EntryKind, GroupId, NodeId, SnapshotMeta, conf_fields

WIRE_VERSION = 1


class MessageType(IntEnum):
    """Every message the core sends or receives."""

    APP = 1
    APP_RESP = 2
    VOTE = 3
    VOTE_RESP = 4
    PRE_VOTE = 5
    PRE_VOTE_RESP = 6
    HEARTBEAT = 7
    HEARTBEAT_RESP = 8
    SNAP = 9
    SNAP_RESP = 10
    TIMEOUT_NOW = 11
    READ_INDEX = 12
    READ_INDEX_RESP = 13


@dataclass(frozen=True, slots=True)
class Message:
    """One Raft message. Fields unused by a type keep their defaults.

    APP: `index`/`log_term` are the entry before `entries`. APP_RESP: `index` is the last index the
    follower matched, or the rejected index with `reject_hint`/`log_term` pointing at where to retry.
    SNAP carries `snapshot` (meta) and one chunk (`chunk_offset`, `chunk_data`, `chunk_done`); SNAP_RESP
    answers with the next offset wanted (`reject` when a chunk was missing). `repairing`: the sender lost
    entries it may have acknowledged and is being repaired (a leader resets its match, counts it for no
    commit); an 18th field only when set, so every other message keeps the 17-field form older peers read
    (an older peer drops a flagged one: it could not act on it).
    """

    type: MessageType
    group: GroupId
    frm: NodeId
    to: NodeId
    term: int = 0
    log_term: int = 0
    index: int = 0
    entries: tuple[Entry, ...] = ()
    commit: int = 0
    reject: bool = False
    reject_hint: int = 0
    snapshot: SnapshotMeta | None = None
    chunk_offset: int = 0
    chunk_data: bytes = b""
    chunk_done: bool = False
    context: bytes = b""
    repairing: bool = False


def encode_message(msg: Message) -> bytes:
    """The msgpack bytes of `msg`."""
    return b"".join(encode_message_parts(msg))


def encode_message_parts(msg: Message) -> list[bytes]:
    """The msgpack encoding of `msg` in parts to be joined: entry data and the snapshot chunk are parts
    of their own, so a frame holding them copies each once (and one entry list serves every follower)."""
    snapshot = None
    if msg.snapshot is not None:
        meta = msg.snapshot
        snapshot = [meta.index, meta.term, *conf_fields(meta.conf)]
    head = (WIRE_VERSION, int(msg.type), msg.group, msg.frm, msg.to, msg.term, msg.log_term, msg.index)
    parts = [array_header(18 if msg.repairing else 17) + _items(head) + array_header(len(msg.entries))]
    for entry in msg.entries:
        numbers = _items((entry.index, entry.term, int(entry.kind)))
        parts += (_ENTRY_HEADER + numbers + bin_header(len(entry.data)), entry.data)
    middle = (msg.commit, msg.reject, msg.reject_hint, snapshot, msg.chunk_offset)
    parts += (_items(middle) + bin_header(len(msg.chunk_data)), msg.chunk_data)
    tail = (msg.chunk_done, msg.context)
    parts.append(_items((*tail, True) if msg.repairing else tail))
    return parts


def _items(values: tuple[Any, ...]) -> bytes:
    """The msgpack encodings of up to 15 values, one after the other (a packed array without its
    one-byte header: one call instead of one per value)."""
    packed: bytes = msgpack.packb(values, use_bin_type=True)
    return packed[1:]


_ENTRY_HEADER = array_header(4)


def decode_message(data: bytes) -> Message:
    """Parse bytes from the network; anything malformed raises `MessageDecodeError`."""
    try:
        fields = msgpack.unpackb(data, raw=False, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise MessageDecodeError(f"not msgpack: {exc}") from exc
    if not isinstance(fields, list) or len(fields) not in (17, 18):
        raise MessageDecodeError("a message is a list of 17 fields (18 with the repairing flag)")
    if type(fields[0]) is not int or fields[0] != WIRE_VERSION:
        raise MessageDecodeError(f"unknown wire version {fields[0]!r}")
    (_, kind, group, frm, to, term, log_term, index, entries, commit, reject, hint, snap, offset, chunk,
     done, context) = fields[:17]  # fmt: skip
    try:
        message_type = MessageType(_int(kind))
    except ValueError as exc:
        raise MessageDecodeError(f"unknown message type {kind!r}") from exc
    return Message(
        type=message_type,
        group=_str(group),
        frm=_str(frm),
        to=_str(to),
        term=_int(term),
        log_term=_int(log_term),
        index=_int(index),
        entries=tuple(_entry(e) for e in _list(entries)),
        commit=_int(commit),
        reject=_bool(reject),
        reject_hint=_int(hint),
        snapshot=None if snap is None else _snapshot_meta(snap),
        chunk_offset=_int(offset),
        chunk_data=_bytes(chunk),
        chunk_done=_bool(done),
        context=_bytes(context),
        repairing=len(fields) == 18 and _bool(fields[17]),
    )


def _entry(value: Any) -> Entry:
    fields = _list(value)
    if len(fields) != 4:
        raise MessageDecodeError("an entry is [index, term, kind, data]")
    try:
        kind = EntryKind(_int(fields[2]))
    except ValueError as exc:
        raise MessageDecodeError(f"unknown entry kind {fields[2]!r}") from exc
    return Entry(index=_int(fields[0]), term=_int(fields[1]), kind=kind, data=_bytes(fields[3]))


def _snapshot_meta(value: Any) -> SnapshotMeta:
    fields = _list(value)
    if len(fields) not in (4, 5):
        raise MessageDecodeError("snapshot meta is [index, term, voters, learners, (incarnations)]")
    voters = tuple(_str(v) for v in _list(fields[2]))
    learners = tuple(_str(v) for v in _list(fields[3]))
    pairs = [_list(pair) for pair in _list(fields[4])] if len(fields) == 5 else []
    if any(len(pair) != 2 for pair in pairs):
        raise MessageDecodeError("an incarnation is [member, incarnation]")
    incarnations = tuple((_str(node), _str(inc)) for node, inc in pairs)
    conf = ConfState(voters, learners, incarnations)
    return SnapshotMeta(index=_int(fields[0]), term=_int(fields[1]), conf=conf)


def _int(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise MessageDecodeError(f"expected a non-negative integer, got {value!r}")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise MessageDecodeError(f"expected a string, got {value!r}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise MessageDecodeError(f"expected a boolean, got {value!r}")
    return value


def _bytes(value: Any) -> bytes:
    if not isinstance(value, bytes):
        raise MessageDecodeError(f"expected bytes, got {type(value).__name__}")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise MessageDecodeError(f"expected a list, got {type(value).__name__}")
    return value
