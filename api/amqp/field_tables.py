"""Header tables written as RabbitMQ relays them: a float as a 64-bit double ('d').

pamqp writes every float as a 32-bit float ('f'): 19.99 reads back as 19.989999771118164, pika reads
that type as an integer (19), and a number beyond its range cannot be written at all. A header value is
a JSON number, a double. Every other value goes through pamqp's own encoder, so those bytes are
pamqp's: keys sorted and cut to FIELD_NAME_BYTES, integers in the smallest type that holds them.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from pamqp import encode

FIELD_NAME_BYTES = 128
"""The longest field name (RabbitMQ's limit; pamqp cuts longer ones)."""

_SIZE = struct.Struct(">I")
_DOUBLE = struct.Struct(">d")


def field_table(table: Mapping[str, Any]) -> bytes:
    """`table` as a field table: its size, then each name and typed value."""
    parts: list[bytes] = []
    for name, value in sorted(table.items()):
        parts += (encode.short_string(_field_name(name)), field_value(value))
    return _sized(b"".join(parts))


def field_value(value: Any) -> bytes:
    """One typed value of a field table or array."""
    if isinstance(value, float):
        return b"d" + _DOUBLE.pack(value)
    if isinstance(value, dict):
        return b"F" + field_table(value)
    if isinstance(value, list):
        return b"A" + _sized(b"".join(map(field_value, value)))
    return encode.encode_table_value(value)


def _field_name(name: str) -> str:
    encoded = name.encode()
    return name if len(encoded) <= FIELD_NAME_BYTES else encoded[:FIELD_NAME_BYTES].decode(errors="ignore")


def _sized(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
