"""How operations travel inside Raft entries: the one owner of that framing, every version of it.

An entry of any group (a queue's or the metadata's) holds a msgpack array of operations: the leader's
batcher merges the proposals that arrive together into one entry (`cluster/replication/proposals.py`, through
`pack_op` and `entry_payload`), and every reader takes them apart with `entry_ops` (or, to read bodies
back, finds where they lie with `entry_body_spans`). A metadata operation is a command of
`metadata_state.codec`. A queue operation has its own envelope:

- version 13: `[13, now_ms, command, bodies]`, as version 12, where a message to enqueue may carry the
  group a queue with message groups orders it in, and a configuration `x-message-groups`;
- version 12: `[12, now_ms, command, bodies]`, as version 11, where a configuration may set
  `x-dead-letter-exchange` and `x-dead-letter-routing-key`;
- version 11: `[11, now_ms, command, bodies]`, as version 10, where a message to enqueue may carry the
  message id a deduplication window takes it by, and a configuration `x-dedupe-window` and `x-dedupe-max`;
- version 10: `[10, now_ms, command, bodies]`, as version 9, where a configuration (an `UpdateConfig`'s,
  an `ApplyPolicy`'s arguments) may set the backlog controls (`x-max-unacked`, `x-discard-mark` with
  `x-discard-below-priority`, `x-dequeue-interval-ms`, `x-dequeue-window`);
- version 9: `[9, now_ms, command, bodies]`, as version 8, where a `Checkout` may carry `auto_ack`;
- version 8: `[8, now_ms, command, bodies]`, as version 7, where the command may be a redrive task's
  (`StartRedrive`, `RedriveCheckout`, `EndRedrive`);
- version 7: `[7, now_ms, command, bodies]`, as version 6, where the command may be an `ApplyPolicy`;
- version 6: `[6, now_ms, command, bodies]`, as version 5, where a message to enqueue may carry a
  priority and a configuration the `x-max-priority` argument;
- version 5: `[5, now_ms, command, bodies]`, as version 4, where a message to enqueue may carry a delay,
  a `Return` its `delay_ms`, and a configuration the `x-delayed-retry-*` arguments;
- version 4: `[4, now_ms, command, bodies]`, as version 3, where the command may be a `Touch` and a
  configuration may set `x-consumer-timeout`;
- version 3: `[3, now_ms, command, bodies]`, as version 2, where a command may carry the fields added
  with version 3 (a `Return`'s or `Cancel`'s `failed` False: a plain return; a `Discard`'s `reason`);
- version 2: `[2, now_ms, command, bodies]`, as version 1, where a command may carry the fields added
  with version 2 (a `Checkout`'s `since_ms`: a reader registered through the log);
- version 1: `[1, now_ms, command, bodies]`: the leader's time, which the machine applies the command
  with (`EntryMeta`), the command's named-field form (`queue_state.command_codec.encode_command`), and
  for an Enqueue its messages as `[body, headers, encoding]`, one per message (None otherwise);
- version 0: `[command bytes, bodies]`, the time inside the positional command bytes
  (`decode_command_v0`).

All decode into the same `QueueOp`, so logs written before version 13 (or 12 to 1) replay (snapshots never
held operations). A leader writes the newest version every node of the cluster said it reads
(`cluster/replication/codec_reads.py`); a command with a field that version has no place for is not written
(the leader builds it only when `op_version()` allows, `cluster/queues/queue_door.py`).

The framing is cluster's, not queue_state's: the envelope carries what the replica keeps beside the
machine (message bodies, which queue_state never sees), and which version to write depends on the
group's members. The command forms inside it are pure and stay with the records in queue_state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from cluster.replication.stored_message import BodySpan, StoredMessage
from queue_state.command_codec import (
    AUTO_ACK_VERSION,
    DEDUPE_VERSION,
    DELAYED_MESSAGE_VERSION,
    MESSAGE_GROUPS_VERSION,
    NAMED_VERSIONS,
    POLICY_VERSION,
    PRIORITY_MESSAGE_VERSION,
    REDRIVE_VERSION,
    CommandDecodeError,
    decode_command,
    decode_command_v0,
    encode_command,
    encode_command_v0,
)
from queue_state.commands import Command, Enqueue, EntryMeta, InvalidCommand
from raft_log.msgpack_parts import array_header

QUEUE_OP_VERSION = 13
"""The newest version of the queue operation envelope this node reads and may write."""
READER_OP_VERSION = 2
"""The first version in which a consumer reading from a time is registered through the log."""
COUNTING_OP_VERSION = 3
"""The first version with plain returns (`failed` False on a Return or Cancel) and reject reasons."""
HOLDING_OP_VERSION = 4
"""The first version with touches (`Touch`) and the queue argument `x-consumer-timeout`."""
DELAY_OP_VERSION = DELAYED_MESSAGE_VERSION
"""The first version with delays: a message's, a nack's (`Return.delay_ms`), the `x-delayed-retry-*`
arguments."""
PRIORITY_OP_VERSION = PRIORITY_MESSAGE_VERSION
"""The first version with priorities: a message's, the `x-max-priority` argument."""
POLICY_OP_VERSION = POLICY_VERSION
"""The first version in which queues apply policies (`ApplyPolicy`)."""
REDRIVE_OP_VERSION = REDRIVE_VERSION
"""The first version with redrive tasks (`StartRedrive`, `RedriveCheckout`, `EndRedrive`)."""
AUTO_ACK_OP_VERSION = AUTO_ACK_VERSION
"""The first version with auto-ack consumers (`Checkout.auto_ack`)."""
DEDUPE_OP_VERSION = DEDUPE_VERSION
"""The first version with deduplication windows: a message's id, `x-dedupe-window`, `x-dedupe-max`."""
GROUPS_OP_VERSION = MESSAGE_GROUPS_VERSION
"""The first version with ordered message groups: a message's group, `x-message-groups`."""


class EntryDecodeError(ValueError):
    """An entry whose data is not a msgpack array of operations."""


def pack_op(op: Any) -> bytes:
    """One operation, encoded for `entry_payload` (msgpack raises TypeError, ValueError or OverflowError
    for one it cannot encode, so that operation fails alone, not the entry it would have shared)."""
    packed: bytes = msgpack.packb(op)
    return packed


def entry_payload(packed_ops: Sequence[bytes]) -> bytes:
    """An entry's data: the msgpack array of operations already encoded by `pack_op`."""
    return b"".join((array_header(len(packed_ops)), *packed_ops))


def entry_ops(data: bytes) -> list[Any]:
    """The operations of an entry's data; EntryDecodeError when it is not an array of them."""
    try:
        ops = msgpack.unpackb(data, raw=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise EntryDecodeError(f"undecodable entry: {exc}") from exc
    if not isinstance(ops, list):
        raise EntryDecodeError("the entry is not a list of operations")
    return ops


def entry_body_spans(data: bytes) -> list[list[BodySpan] | None]:
    """Where the bodies of each operation of an entry's data lie in it, one `BodySpan` per message (None
    for an operation that carries no bodies, or is no operation), found without decoding anything else:
    a body is then read as a slice of the entry. EntryDecodeError when the data is not an array."""
    unpacker = _unpacker(data)
    try:
        return [_op_spans(data, unpacker) for _ in range(unpacker.read_array_header())]
    except (ValueError, IndexError, msgpack.UnpackException) as exc:  # IndexError: cut short
        raise EntryDecodeError(f"undecodable entry: {exc}") from exc


def record_span(record: bytes) -> BodySpan:
    """Where the body lies in a record of `[body, headers, encoding]` (a body stored on its own)."""
    try:
        span = _body_span(record, _unpacker(record))
    except (ValueError, IndexError, msgpack.UnpackException) as exc:
        raise EntryDecodeError(f"undecodable body record: {exc}") from exc
    if span is None:
        raise EntryDecodeError("not a body record")
    return span


def _unpacker(data: bytes) -> msgpack.Unpacker:
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(len(data), 1))
    unpacker.feed(data)
    return unpacker


def _op_spans(data: bytes, unpacker: msgpack.Unpacker) -> list[BodySpan] | None:
    """The spans of the operation at the unpacker's position, which it moves past that operation."""
    if not _is_array(data, unpacker.tell()):
        unpacker.skip()
        return None
    fields = unpacker.read_array_header()
    if fields == 4:
        version = unpacker.unpack()
        unpacker.skip()
        unpacker.skip()
        if type(version) is not int or version not in NAMED_VERSIONS:
            unpacker.skip()
            return None
    elif fields == 2:
        unpacker.skip()
    else:
        for _ in range(fields):
            unpacker.skip()
        return None
    if not _is_array(data, unpacker.tell()):
        unpacker.skip()
        return None
    spans = [_body_span(data, unpacker) for _ in range(unpacker.read_array_header())]
    found = [span for span in spans if span is not None]
    return found if len(found) == len(spans) else None


def _body_span(data: bytes, unpacker: msgpack.Unpacker) -> BodySpan | None:
    """The span of the `[body, headers, encoding]` at the unpacker's position (None when it is not one),
    which it moves past."""
    if not _is_array(data, unpacker.tell()):
        unpacker.skip()
        return None
    fields = unpacker.read_array_header()
    if fields != 3 or data[unpacker.tell()] not in _BIN_HEADER_BYTES:
        for _ in range(fields):
            unpacker.skip()
        return None
    body_at = unpacker.tell() + _BIN_HEADER_BYTES[data[unpacker.tell()]]
    unpacker.skip()
    body_end = unpacker.tell()
    unpacker.skip()
    headers_end = unpacker.tell()
    encoding = unpacker.unpack()
    if type(encoding) is not str or data[body_end] not in _MAP_MARKERS:
        return None
    return body_at, body_end, headers_end, encoding


_BIN_HEADER_BYTES = {0xC4: 2, 0xC5: 3, 0xC6: 5}  # msgpack bin 8/16/32: marker and length
_MAP_MARKERS = frozenset((*range(0x80, 0x90), 0xDE, 0xDF))


def _is_array(data: bytes, at: int) -> bool:
    marker = data[at]
    return 0x90 <= marker <= 0x9F or marker in (0xDC, 0xDD)


@dataclass(frozen=True, slots=True)
class QueueOp:
    """One decoded operation: the meta its command is applied with, the command, and an Enqueue's
    bodies as the entry carries them (`[body, headers, encoding]` per message), else None."""

    meta: EntryMeta
    command: Command
    bodies: list[list[Any]] | None


def encode_queue_op(
    meta: EntryMeta,
    command: Command,
    bodies: Sequence[StoredMessage] | None = None,
    version: int = QUEUE_OP_VERSION,
) -> list[Any]:
    """The envelope of one operation in `version` (0 to QUEUE_OP_VERSION); ValueError for a command with a
    field that version has no place for."""
    payload = None if bodies is None else [[m.body, m.headers, m.encoding] for m in bodies]
    if version in NAMED_VERSIONS:
        return [version, meta.now_ms, encode_command(command, version), payload]
    if version == 0:
        return [encode_command_v0(meta, command), payload]
    raise ValueError(f"no queue operation version {version}")


def decode_queue_op(op: Any, newest: int = QUEUE_OP_VERSION) -> QueueOp:
    """An operation of any version up to `newest` (what this node's build reads); anything else raises
    `CommandDecodeError`."""
    if _is_named(op):
        if op[0] > newest:
            raise CommandDecodeError(f"queue operation version {op[0]}: this node reads up to {newest}")
        try:
            meta = EntryMeta(op[1])
        except InvalidCommand as exc:
            raise CommandDecodeError(str(exc)) from exc
        command, bodies = decode_command(op[2]), op[3]
    elif type(op) is list and len(op) == 2 and type(op[0]) is bytes:
        (meta, command), bodies = decode_command_v0(op[0]), op[1]
    else:
        raise CommandDecodeError("not a queue operation")
    if not _bodies_fit(command, bodies):
        raise CommandDecodeError("message bodies do not match the command")
    return QueueOp(meta, command, bodies)


def op_bodies(op: Any) -> Any:
    """What an operation of any version carries in its bodies place (None when nothing, or when it is
    no operation), read without decoding its command."""
    if _is_named(op):
        return op[3]
    if type(op) is list and len(op) == 2:
        return op[1]
    return None


def _is_named(op: Any) -> bool:
    """True for an operation of version 1 to 3 (`[version, now_ms, command, bodies]`)."""
    return type(op) is list and len(op) == 4 and type(op[0]) is int and op[0] in NAMED_VERSIONS


def _bodies_fit(command: Command, bodies: Any) -> bool:
    """True when an operation's bodies are absent, or are one (bytes, headers, encoding) per message."""
    if bodies is None:
        return True
    if not isinstance(command, Enqueue) or not isinstance(bodies, list):
        return False
    if len(bodies) != len(command.messages):
        return False
    return all(isinstance(b, list) and len(b) == 3 and isinstance(b[0], bytes) for b in bodies)
