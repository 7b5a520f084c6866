"""The frames of the streaming connection, protocol version 1 (docs/use/stream-protocol.md): reading the
client's, writing the node's. Each frame is one msgpack map with an `op`."""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from api.deliveries import delivery_parts
from api.error_answers import retry_after_s
from api.errors import ApiError
from api.validation import bad, msgpack_object
from cluster.queues.queue_limits import INT64_MAX
from cluster.queues.queue_results import MessageRow

VERSIONS = (1,)
CLIENT_OPS = frozenset({"hello", "publish", "consume", "ack", "nack", "touch", "cancel"})
OVERSIZE_FACTOR = 2  # a frame up to this many times the limit is read and refused; a larger one closes
HELLO_MAX_BYTES = 4096
"""The largest frame before the hello is said: refused (413) without being decoded (W5)."""
CONTROL_MAX_BYTES = 1024 * 1024
"""The largest frame of an operation other than a publish (a publish's limit is the node's `max_frame`)."""


@dataclass(frozen=True, slots=True)
class Frame:
    """A client's frame: its op, its request id (None for a hello), its other fields and its size."""

    op: str
    id: int | None
    fields: dict[str, Any]
    size: int


class BadFrame(ApiError):
    """A frame that cannot be served (400, or 413 when too large); `id` is its request id if readable."""

    def __init__(self, error: ApiError, frame_id: int | None) -> None:
        super().__init__(error.status, error.code, error.reason, **error.extra)
        self.id = frame_id


def read_frame(data: bytes, max_bytes: int) -> Frame:
    """The frame a binary message holds; BadFrame when it is not one, or is larger than `max_bytes`
    (or than CONTROL_MAX_BYTES for an operation other than a publish). Its decoding is bounded
    (`msgpack_object`), and a frame over the limit is not decoded."""
    if len(data) > max_bytes:
        raise BadFrame(_too_large(len(data), max_bytes), _peek_id(data))
    try:
        fields = msgpack_object(data, "a frame")
    except ApiError as exc:
        raise BadFrame(exc, None) from exc
    frame_id = fields.pop("id", None)
    if frame_id is not None and (type(frame_id) is not int or not 0 <= frame_id <= INT64_MAX):
        raise BadFrame(bad("id must be a non-negative 64-bit integer"), None)
    op = fields.pop("op", None)
    if type(op) is not str or op not in CLIENT_OPS:
        raise BadFrame(bad(f"unknown op {reprlib.repr(op)}; one of {sorted(CLIENT_OPS)}"), frame_id)
    if op != "hello" and frame_id is None:
        raise BadFrame(bad(f"a {op} needs an id"), None)
    if op != "publish" and len(data) > CONTROL_MAX_BYTES:
        raise BadFrame(_too_large(len(data), CONTROL_MAX_BYTES, op), frame_id)
    return Frame(op, frame_id, fields, len(data))


def _too_large(size: int, max_bytes: int, op: str = "") -> ApiError:
    what = f"a {op} frame" if op else "a frame"
    return ApiError(413, "too_large", f"{what} here is at most {max_bytes} bytes, not {size}")


def _peek_id(data: bytes) -> int | None:
    """The `id` of an oversized frame, read without unpacking its other values (clients put it first)
    nor any large key."""
    unpacker = msgpack.Unpacker(
        raw=False, max_buffer_size=len(data), max_str_len=16, max_bin_len=16, max_array_len=0, max_map_len=0
    )
    unpacker.feed(data)
    try:
        for _ in range(min(unpacker.read_map_header(), 4)):
            if unpacker.unpack() == "id":
                value = unpacker.unpack()
                return value if type(value) is int and 0 <= value <= INT64_MAX else None
            unpacker.skip()
    except (ValueError, TypeError, msgpack.UnpackException):
        pass
    return None


def hello(version: int, node: str, max_frame: int) -> bytes:
    """The node's answer to a hello."""
    return msgpack.packb({"op": "hello", "version": version, "node": node, "max_frame": max_frame})


def answer(op: str, frame_id: int, body: dict[str, Any]) -> bytes:
    """The answer `op` (confirm, consume-ok, settled) to request `frame_id`, with `body`'s fields."""
    return msgpack.packb({"op": op, "id": frame_id, **body})


def error(frame_id: int | None, status: int, body: dict[str, Any]) -> bytes:
    """An error answer: the status and JSON error body the HTTP endpoint would give, and its
    `Retry-After` as `retry_after` when it has one."""
    retry_after = retry_after_s(status, body)
    extra = {} if retry_after is None else {"retry_after": retry_after}
    return msgpack.packb({"op": "error", "id": frame_id, "status": status, **body, **extra})


def deliver(tag: str, rows: Sequence[MessageRow]) -> bytes:
    """Deliveries for consumer `tag` (the messages last, packed as a msgpack deliveries answer is)."""
    head = b"\x83\xa2op\xa7deliver\xa3tag%b\xa8messages" % msgpack.packb(tag)
    return b"".join((head, *delivery_parts(rows)))


def cancelled(
    tag: str, reason: str, frame_id: int | None = None, hint: dict[str, str | None] | None = None
) -> bytes:
    """Consumer `tag` delivers no more on this connection, for `reason` (with a leader hint); `frame_id`
    when it answers a cancel."""
    extra: dict[str, Any] = {k: v for k, v in (hint or {}).items() if v is not None}
    if frame_id is not None:
        extra["id"] = frame_id
    return msgpack.packb({"op": "cancelled", "tag": tag, "reason": reason, **extra})


def blocked(alarmed: dict[str, list[str]]) -> bytes:
    """Resource alarms are in effect (AMQP's connection.blocked): `alarmed` lists each node in alarm
    with its alarms; publishes to queues with a replica on one of them are refused until they clear."""
    alarms = [
        {"node": node, "resource": resource} for node, resources in alarmed.items() for resource in resources
    ]
    named = ", ".join(f"{a['resource']} alarm on {a['node']}" for a in alarms)
    return msgpack.packb({"op": "blocked", "alarms": alarms, "reason": named})


def unblocked() -> bytes:
    """No resource alarm is in effect any more (AMQP's connection.unblocked)."""
    return msgpack.packb({"op": "unblocked"})
