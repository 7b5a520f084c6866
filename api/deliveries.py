"""Deliveries as the API answers them (consumer polls, gets, durable log reads), built in one pass.

JSON is the contract: `[{"id", "body", "encoding", "headers", "delivery_count", "redelivered",
"acquired_count", "published_at"}]` (plus `"priority"` for a message above level 0), a body that was published
as valid UTF-8 text stays text, anything else is base64. The answer is assembled as bytes: base64 needs no
JSON escaping, so only text bodies and non-empty headers go through the json encoder.

A request with `Accept: application/msgpack` gets the same maps as msgpack instead, each body raw bytes (bin)
whatever it was published as, `encoding` telling which (`utf8` text or `base64` binary): no base64 on either
side and a quarter fewer bytes on the wire. The streaming connection's `deliver` frames carry the same maps.
They are packed from prepared parts, not through a map per message: the integers in their 64-bit forms and the
array and body lengths in their 32-bit ones, the encoding and headers of a first delivery without headers as
one constant, the body copied once, from the entry it was read from into the answer.

Each answer has a byte budget (W8): its messages' bodies add up to at most `max_bytes` (a get's body
field, a poll's or browse's query parameter; DEFAULT_MAX_BYTES when not given, at most MAX_MAX_BYTES),
the first message always, so a reader makes progress whatever the size of the next message; what a
poll leaves out comes with the next one.
"""

from __future__ import annotations

import binascii
import json
import struct
from collections.abc import Sequence
from typing import Annotated, Any

import msgpack
from aiohttp import web
from msgspec import Meta

from api.validation import MSGPACK, bad, query_int
from cluster.queues.queue_results import MessageRow

JSON = "application/json"
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
MAX_MAX_BYTES = 64 * 1024 * 1024
MaxBytes = Annotated[int, Meta(ge=1, le=MAX_MAX_BYTES)]
"""An answer's byte budget as a request gives it (a get's body field, a poll's or browse's query)."""
MAX_BYTES_ABOUT = (
    f"the answer's byte budget: its messages' bodies add up to at most this (the first always), "
    f"{DEFAULT_MAX_BYTES} when not given"
)

_TEXT_ROW = b'{"id":%d,"body":%b,"encoding":"utf8","headers":%b,"delivery_count":%d,"redelivered":%b'
_BINARY_ROW = b'{"id":%d,"body":"%b","encoding":"base64","headers":%b,"delivery_count":%d,"redelivered":%b'
_ROW_END = b',"acquired_count":%d,"published_at":%d%b},'
# a delivery map's fixed part: its header (8 fields, one more for each of seq and priority), then id,
# delivery_count, redelivered, acquired_count and published_at, each key as a fixstr and each integer as
# a uint64 (0xcf) or an int64 (0xd3)
_FIXED = struct.Struct(">B3sBQ15sBQ12sB15sBQ13sBq")
_KEYS = (b"\xa2id", b"\xaedelivery_count", b"\xabredelivered", b"\xaeacquired_count", b"\xacpublished_at")
_ARRAY = struct.Struct(">BI")  # an array 32 header
_SEQ = struct.Struct(">4sBQ")  # the optional seq
_PRIORITY = struct.Struct(">9sB")  # the priority, when above 0: a positive fixint (a level is at most 31)
_BODY = struct.Struct(">5sBI")  # the body key and a bin 32 header
_PLAIN_TAILS = {e: b"\xa8encoding" + msgpack.packb(e) + b"\xa7headers\x80" for e in ("utf8", "base64")}
_encode = json.JSONEncoder(separators=(",", ":")).encode
_encode_text = json.JSONEncoder(ensure_ascii=False).encode  # 25% faster; stored text is valid UTF-8


def max_bytes_query(request: web.Request) -> int:
    """The byte budget of an answer a `max_bytes` query parameter asks for."""
    return _budget(query_int(request, "max_bytes", DEFAULT_MAX_BYTES, maximum=MAX_MAX_BYTES))


def _budget(max_bytes: int) -> int:
    if not 1 <= max_bytes <= MAX_MAX_BYTES:
        raise bad(f"max_bytes must be from 1 to {MAX_MAX_BYTES}")
    return max_bytes


def wants_msgpack(request: web.Request) -> bool:
    """True when the request's Accept header names msgpack."""
    accept = request.headers.get("Accept", "")
    return MSGPACK in accept and any(part.split(";")[0].strip() == MSGPACK for part in accept.split(","))


def deliveries_response(request: web.Request, rows: Sequence[MessageRow]) -> web.Response:
    """The answer listing `rows` (each with its durable sequence number `seq` when it has one), as the
    client asked."""
    if wants_msgpack(request):
        return web.Response(body=msgpack_deliveries(rows), content_type=MSGPACK)
    return web.Response(body=json_deliveries(rows), content_type=JSON, charset="utf-8")


def json_deliveries(rows: Sequence[MessageRow]) -> bytearray:
    """The JSON array of `rows`.

    One growing buffer: joining a megabyte of parts into fresh memory costs as much as encoding them."""
    out = bytearray(b"[")
    for row in rows:
        template, body = _json_body(row)
        headers = _headers(row)
        out += template % (
            row.id,
            body,
            _encode(headers).encode() if headers else b"{}",
            row.delivery_count,
            b"true" if row.redelivered else b"false",
        )
        extra = b"" if row.seq is None else b',"seq":%d' % row.seq
        if row.priority:
            extra += b',"priority":%d' % row.priority
        out += _ROW_END % (row.acquired_count, row.published_at_ms, extra)
    if rows:
        del out[-1]  # the last row's comma
    out += b"]"
    return out


def msgpack_deliveries(rows: Sequence[MessageRow]) -> bytes:
    """The msgpack array of `rows`, bodies as bin."""
    return b"".join(delivery_parts(rows))


def msgpack_delivery(row: MessageRow) -> bytes:
    """One delivery as the map a msgpack deliveries answer holds."""
    return b"".join(delivery_parts([row])[1:])  # the parts after the array header


def delivery_parts(rows: Sequence[MessageRow]) -> list[bytes | memoryview]:
    """The msgpack array of `rows` in parts to join, the bodies among them as they are (so that joining
    copies each body once, into memory sized for the whole answer)."""
    parts: list[bytes | memoryview] = [_ARRAY.pack(0xDD, len(rows))]
    append = parts.append
    for row in rows:
        fixed = _FIXED.pack(
            0x88 + (row.seq is not None) + (row.priority > 0),
            _KEYS[0],
            0xCF,
            row.id,
            _KEYS[1],
            0xCF,
            row.delivery_count,
            _KEYS[2],
            0xC3 if row.redelivered else 0xC2,
            _KEYS[3],
            0xCF,
            row.acquired_count,
            _KEYS[4],
            0xD3,
            row.published_at_ms,
        )
        append(fixed if row.seq is None else fixed + _SEQ.pack(b"\xa3seq", 0xCF, row.seq))
        if row.priority:
            append(_PRIORITY.pack(b"\xa8priority", row.priority))
        tail = None if row.acquired_count or row.headers else _PLAIN_TAILS.get(row.encoding)
        if tail is None:
            tail = b"\xa8encoding%b\xa7headers%b" % (
                msgpack.packb(row.encoding),
                msgpack.packb(_headers(row)),
            )
        append(tail)
        append(_BODY.pack(b"\xa4body", 0xC6, len(row.body)))
        append(row.body)
    return parts


def _json_body(row: MessageRow) -> tuple[bytes, bytes]:
    """The row template and the body for it: text when published so and valid UTF-8, else base64."""
    if row.encoding == "utf8":
        try:
            return _TEXT_ROW, _encode_text(str(row.body, "utf-8")).encode()
        except UnicodeDecodeError:
            pass
    return _BINARY_ROW, binascii.b2a_base64(row.body, newline=False)


def _headers(row: MessageRow) -> dict[str, Any]:
    """The stored headers, with `x-delivery-count` after a failed delivery and `x-acquired-count` on a
    redelivery (RabbitMQ 4.x's annotations)."""
    if not row.acquired_count:
        return row.headers
    counts = {"x-acquired-count": row.acquired_count}
    if row.delivery_count:
        counts["x-delivery-count"] = row.delivery_count
    return {**row.headers, **counts}
