"""Deliveries as the API answers them (consumer polls, gets, durable log reads), built in one pass.

JSON is the contract: `[{"id", "body", "encoding", "headers", "delivery_count", "redelivered",
"published_at"}]`, a body that was published as valid UTF-8 text stays text, anything else is base64.
The answer is assembled as bytes: base64 needs no JSON escaping, so only text bodies and non-empty
headers go through the json encoder.

A request with `Accept: application/msgpack` gets the same maps as msgpack instead, each body raw bytes
(bin) whatever it was published as, `encoding` telling which (`utf8` text or `base64` binary): no base64
on either side and a quarter fewer bytes on the wire.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Sequence
from typing import Any

import msgpack
from aiohttp import web

from api.validation import MSGPACK
from cluster.bodies import StoredMessage
from queue_state.effects import Delivery

JSON = "application/json"
Row = tuple[Delivery, StoredMessage]

_TEXT_ROW = b'{"id":%d,"body":%b,"encoding":"utf8","headers":%b,"delivery_count":%d,"redelivered":%b'
_BINARY_ROW = b'{"id":%d,"body":"%b","encoding":"base64","headers":%b,"delivery_count":%d,"redelivered":%b'
_ROW_END = b',"published_at":%d%b},'
_encode = json.JSONEncoder(separators=(",", ":")).encode
_encode_text = json.JSONEncoder(ensure_ascii=False).encode  # 25% faster; stored text is valid UTF-8


def wants_msgpack(request: web.Request) -> bool:
    """True when the request's Accept header names msgpack."""
    accept = request.headers.get("Accept", "")
    return MSGPACK in accept and any(part.split(";")[0].strip() == MSGPACK for part in accept.split(","))


def deliveries_response(
    request: web.Request, rows: Sequence[Row], seqs: Sequence[int] | None = None
) -> web.Response:
    """The answer listing `rows` (with a durable consumer's sequence numbers `seqs`), as the client asked."""
    if wants_msgpack(request):
        return web.Response(body=msgpack_deliveries(rows, seqs), content_type=MSGPACK)
    return web.Response(body=json_deliveries(rows, seqs), content_type=JSON, charset="utf-8")


def json_deliveries(rows: Sequence[Row], seqs: Sequence[int] | None = None) -> bytearray:
    """The JSON array of `rows` (each with its `seq` when `seqs` is given).

    One growing buffer: joining a megabyte of parts into fresh memory costs as much as encoding them."""
    tails = [b',"seq":%d' % seq for seq in seqs] if seqs is not None else [b""] * len(rows)
    out = bytearray(b"[")
    for (delivery, stored), tail in zip(rows, tails, strict=True):
        template, body = _json_body(stored)
        headers = _headers(delivery, stored)
        out += template % (
            delivery.id,
            body,
            _encode(headers).encode() if headers else b"{}",
            delivery.delivery_count,
            b"true" if delivery.redelivered else b"false",
        )
        out += _ROW_END % (delivery.enqueued_at_ms, tail)
    if rows:
        del out[-1]  # the last row's comma
    out += b"]"
    return out


def msgpack_deliveries(rows: Sequence[Row], seqs: Sequence[int] | None = None) -> bytes:
    """The msgpack array of `rows`, bodies as bin (each with its `seq` when `seqs` is given)."""
    maps: list[dict[str, Any]] = [
        {
            "id": delivery.id,
            "body": stored.body,
            "encoding": stored.encoding,
            "headers": _headers(delivery, stored),
            "delivery_count": delivery.delivery_count,
            "redelivered": delivery.redelivered,
            "published_at": delivery.enqueued_at_ms,
        }
        for delivery, stored in rows
    ]
    if seqs is not None:
        for row, seq in zip(maps, seqs, strict=True):
            row["seq"] = seq
    return msgpack.packb(maps)


def _json_body(stored: StoredMessage) -> tuple[bytes, bytes]:
    """The row template and the body for it: text when published so and valid UTF-8, else base64."""
    if stored.encoding == "utf8":
        try:
            return _TEXT_ROW, _encode_text(stored.body.decode()).encode()
        except UnicodeDecodeError:
            pass
    return _BINARY_ROW, binascii.b2a_base64(stored.body, newline=False)


def _headers(delivery: Delivery, stored: StoredMessage) -> dict[str, Any]:
    """The stored headers, with `x-delivery-count` on a redelivery."""
    if delivery.delivery_count:
        return {**stored.headers, "x-delivery-count": delivery.delivery_count}
    return stored.headers
