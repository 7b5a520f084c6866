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
from cluster.queue_results import MessageRow

JSON = "application/json"

_TEXT_ROW = b'{"id":%d,"body":%b,"encoding":"utf8","headers":%b,"delivery_count":%d,"redelivered":%b'
_BINARY_ROW = b'{"id":%d,"body":"%b","encoding":"base64","headers":%b,"delivery_count":%d,"redelivered":%b'
_ROW_END = b',"published_at":%d%b},'
_encode = json.JSONEncoder(separators=(",", ":")).encode
_encode_text = json.JSONEncoder(ensure_ascii=False).encode  # 25% faster; stored text is valid UTF-8


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
        out += _ROW_END % (row.published_at_ms, b"" if row.seq is None else b',"seq":%d' % row.seq)
    if rows:
        del out[-1]  # the last row's comma
    out += b"]"
    return out


def msgpack_deliveries(rows: Sequence[MessageRow]) -> bytes:
    """The msgpack array of `rows`, bodies as bin."""
    return msgpack.packb(delivery_maps(rows))


def delivery_maps(rows: Sequence[MessageRow]) -> list[dict[str, Any]]:
    """`rows` as the maps of a msgpack deliveries answer (bodies as bytes)."""
    maps: list[dict[str, Any]] = []
    for row in rows:
        fields = {
            "id": row.id,
            "body": row.body,
            "encoding": row.encoding,
            "headers": _headers(row),
            "delivery_count": row.delivery_count,
            "redelivered": row.redelivered,
            "published_at": row.published_at_ms,
        }
        if row.seq is not None:
            fields["seq"] = row.seq
        maps.append(fields)
    return maps


def _json_body(row: MessageRow) -> tuple[bytes, bytes]:
    """The row template and the body for it: text when published so and valid UTF-8, else base64."""
    if row.encoding == "utf8":
        try:
            return _TEXT_ROW, _encode_text(str(row.body, "utf-8")).encode()
        except UnicodeDecodeError:
            pass
    return _BINARY_ROW, binascii.b2a_base64(row.body, newline=False)


def _headers(row: MessageRow) -> dict[str, Any]:
    """The stored headers, with `x-delivery-count` on a redelivery."""
    if row.delivery_count:
        return {**row.headers, "x-delivery-count": row.delivery_count}
    return row.headers
