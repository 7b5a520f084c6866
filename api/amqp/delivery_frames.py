"""A delivered message's frames packed straight into bytes: `basic.deliver`, the content header, the body.

pamqp builds, validates and marshals an object per frame, about 11 µs for a 1 KiB delivery: a quarter of
an AMQP consumer's node time went there. These frames are packed with `struct`; only the properties are
still marshalled by pamqp (but for the headers' floats, written as doubles: `field_tables`), once per
distinct set (a consumer's messages mostly share theirs). `tests/amqp/test_delivery_frames.py` holds the
bytes to pamqp's own, and what pamqp reads back from them to the row's properties.
"""

from __future__ import annotations

import functools
import struct

from pamqp.constants import FRAME_BODY, FRAME_END_CHAR, FRAME_HEADER, FRAME_METHOD

from api.amqp.properties import marshalled_delivery_properties
from cluster.queues.queue_results import MessageRow

PROPERTIES_KEPT = 1024
"""How many distinct encoded property sets are kept for reuse (all dropped when full)."""

_FRAME = struct.Struct(">BHI")
_DELIVER = struct.Struct(">HH")  # class basic (60), method deliver (60)
_TAG_AND_FLAG = struct.Struct(">QB")
_CONTENT = struct.Struct(">HHQ")  # class basic, weight 0, body size
_BASIC = 60
_DELIVER_METHOD = 60
_FRAME_OVERHEAD = _FRAME.size + 1  # a frame's header and end octet

_properties: dict[object, bytes] = {}


def deliver_frame(
    channel: int, consumer_tag: str, delivery_tag: int, redelivered: bool, exchange: str, routing_key: str
) -> bytes:
    """The `basic.deliver` method frame."""
    payload = b"".join(
        (
            _DELIVER.pack(_BASIC, _DELIVER_METHOD),
            _shortstr(consumer_tag),
            _TAG_AND_FLAG.pack(delivery_tag, 1 if redelivered else 0),
            _shortstr(exchange),
            _shortstr(routing_key),
        )
    )
    return _FRAME.pack(FRAME_METHOD, channel, len(payload)) + payload + FRAME_END_CHAR


def row_content(channel: int, row: MessageRow, frame_max: int) -> bytes:
    """The content header and body frames of a delivered row (`marshalled_delivery_properties`)."""
    return content_frames(channel, encoded_properties(row), row.body, frame_max)


def content_frames(channel: int, properties: bytes, body: bytes | memoryview, frame_max: int) -> bytes:
    """A content header (with `properties` already encoded) and `body` in frames that fit `frame_max`."""
    header = _CONTENT.pack(_BASIC, 0, len(body)) + properties
    parts = [_FRAME.pack(FRAME_HEADER, channel, len(header)), header, FRAME_END_CHAR]
    room = frame_max - _FRAME_OVERHEAD
    for at in range(0, len(body), room):
        piece = body[at : at + room]
        parts += (_FRAME.pack(FRAME_BODY, channel, len(piece)), piece, FRAME_END_CHAR)
    return b"".join(parts)


def encoded_properties(row: MessageRow) -> bytes:
    """The row's delivery properties as a content header carries them (flags, then values)."""
    try:
        key: object = (
            tuple(map(_typed, row.headers.items())),
            row.delivery_count,
            row.acquired_count,
            row.priority,
        )
        encoded = _properties.get(key)
    except TypeError:  # a header holds a table or an array: not kept
        return marshalled_delivery_properties(row)
    if encoded is None:
        if len(_properties) >= PROPERTIES_KEPT:
            _properties.clear()
        encoded = _properties[key] = marshalled_delivery_properties(row)
    return encoded


def _typed(item: tuple[str, object]) -> tuple[object, ...]:
    """A header in a key that tells apart values Python holds equal: 1, True and 1.0, 0.0 and -0.0."""
    name, value = item
    return (name, float, value.hex()) if isinstance(value, float) else (name, type(value), value)


@functools.lru_cache(maxsize=4096)  # consumer tags, exchanges and routing keys repeat
def _shortstr(text: str) -> bytes:
    encoded = text.encode()
    if len(encoded) > 255:
        raise ValueError(f"a short string of {len(encoded)} bytes: {text[:40]!r}...")
    return bytes((len(encoded),)) + encoded
