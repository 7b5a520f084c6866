"""AMQP basic properties and headers ↔ a quorumq message's fields.

A published message keeps its body as raw bytes (stored as binary, which JSON readers get as base64),
its `priority` and `expiration` as the message's own fields, and its headers. Every other property
travels as a header named `x-amqp-<property>` (`x-amqp-content-type`, `x-amqp-message-id`, ...), so an
HTTP or Python consumer sees it, and a message published over HTTP with such a header reaches an AMQP
consumer with the property set. A delivery takes those headers back out into its properties and adds
`x-delivery-count` once the message has failed a delivery, as RabbitMQ's quorum queues do; the named
exchange and routing key a message was routed by (`x-amqp-exchange`, `x-amqp-routing-key`) go into
its `basic.deliver` or `get-ok` instead (`published_route`).

Header values are JSON values in quorumq. A field table's other types are converted on the way in and
do not come back as they were: a byte array becomes its text when it is UTF-8, else base64 text; a
timestamp becomes epoch seconds; a decimal becomes its text; a 32-bit float comes back as the same
number in a double, as every number is delivered (`field_tables`).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import struct
from collections.abc import Mapping
from typing import Any

from pamqp import commands

from api.amqp.field_tables import field_table
from api.amqp.reply_codes import PRECONDITION_FAILED, channel_error
from cluster.queues.queue_results import MessageRow
from cluster.replication.stored_message import ROUTE_HEADERS

PROPERTY_PREFIX = "x-amqp-"
DELIVERY_COUNT = "x-delivery-count"
ACQUIRED_COUNT = "x-acquired-count"
_FLAGS = struct.Struct(">H")  # which properties a content header carries, in their order
_CONTENT_TYPE, _CONTENT_ENCODING, _HEADERS = 1 << 15, 1 << 14, 1 << 13
TEXT_PROPERTIES = (
    "content_type",
    "content_encoding",
    "correlation_id",
    "reply_to",
    "message_id",
    "message_type",
    "user_id",
    "app_id",
)
"""The short-string properties kept as headers (`message_type` is AMQP's `type`; `cluster_id` is
deprecated and must be empty, so it is not kept)."""
_HEADER_OF = {
    name: PROPERTY_PREFIX + ("type" if name == "message_type" else name).replace("_", "-")
    for name in TEXT_PROPERTIES
}
_HEADER_OF["delivery_mode"] = PROPERTY_PREFIX + "delivery-mode"
_HEADER_OF["timestamp"] = PROPERTY_PREFIX + "timestamp"
_PROPERTY_OF = {header: name for name, header in _HEADER_OF.items()}


def published_fields(properties: commands.Basic.Properties, body: bytes) -> dict[str, Any]:
    """The fields of one message of a publish body (`api.publish_job.PublishedMessage`) for an AMQP
    message: its body, headers, priority and expiration. An expiration that is not a count of ms is a
    PRECONDITION_FAILED channel error, as RabbitMQ answers it."""
    headers = {  # the properties say what the x-amqp-* headers hold, never a header of the same name
        str(key): json_value(value)
        for key, value in (properties.headers or {}).items()
        if not str(key).startswith(PROPERTY_PREFIX)
    }
    for name, header in _HEADER_OF.items():
        value = getattr(properties, name)
        if value is not None:
            headers[header] = json_value(value)
    fields: dict[str, Any] = {"body": bytes(body), "headers": headers}
    if properties.priority is not None:
        fields["priority"] = properties.priority
    if properties.expiration is not None:
        fields["expiration"] = _expiration_ms(properties.expiration)
    return fields


def _expiration_ms(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise channel_error(PRECONDITION_FAILED, f"invalid expiration '{text}': not a count of milliseconds")
    return int(text)


def delivery_properties(row: MessageRow) -> commands.Basic.Properties:
    """The properties of a delivered message: its headers but the `x-amqp-*` ones, which become the
    properties they name (the exchange and routing key go into the method instead: `published_route`),
    its priority, and `x-delivery-count` once it failed a delivery."""
    headers, properties = _delivery_fields(row)
    return commands.Basic.Properties(headers=headers or None, **properties)


def marshalled_delivery_properties(row: MessageRow) -> bytes:
    """`delivery_properties` as a content header carries them (flags, then values), with the headers'
    floats as doubles (`field_tables`)."""
    headers, properties = _delivery_fields(row)
    marshalled = commands.Basic.Properties(**properties).marshal()
    if not headers:
        return marshalled
    (flags,) = _FLAGS.unpack_from(marshalled)
    at = _FLAGS.size
    for flag in (_CONTENT_TYPE, _CONTENT_ENCODING):  # the short strings before the headers
        if flags & flag:
            at += 1 + marshalled[at]
    return (
        _FLAGS.pack(flags | _HEADERS) + marshalled[_FLAGS.size : at] + field_table(headers) + marshalled[at:]
    )


def _delivery_fields(row: MessageRow) -> tuple[dict[str, Any], dict[str, Any]]:
    """The headers and the other properties of `delivery_properties`."""
    headers: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for key, value in row.headers.items():
        if key in ROUTE_HEADERS:
            continue
        name = _PROPERTY_OF.get(key)
        if name is None:
            headers[key] = _table_value(value)
        else:
            properties[name] = _property_value(name, value)
    if row.acquired_count:  # as the HTTP API's deliveries carry it (RabbitMQ 4.x's annotation)
        headers[ACQUIRED_COUNT] = row.acquired_count
    if row.delivery_count:
        headers[DELIVERY_COUNT] = row.delivery_count
    if row.priority:
        properties["priority"] = min(row.priority, 255)
    return headers, properties


def _property_value(name: str, value: Any) -> Any:
    """A property's value from its header; one of the wrong type (set over HTTP) is dropped to None."""
    if name == "timestamp":
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
            try:
                return datetime.datetime.fromtimestamp(value, tz=datetime.UTC)
            except (OverflowError, OSError, ValueError):
                return None
        return None
    if name == "delivery_mode":
        return value if value in (1, 2) else None
    return value if isinstance(value, str) and len(value.encode()) <= 255 else None


def _table_value(value: Any) -> Any:
    """A header's JSON value as a field table can carry it: an integer beyond 64 bits as its text."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return str(value)
    if isinstance(value, dict):
        return {key: _table_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_table_value(item) for item in value]
    return value


def json_table(table: Mapping[str, Any] | None) -> dict[str, Any]:
    """A field table (a method's arguments) as a map of JSON values."""
    return {str(key): json_value(value) for key, value in (table or {}).items()}


def json_value(value: Any) -> Any:
    """A field-table value as a JSON value (see the module's note on what does not come back as it was)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            return base64.b64encode(value).decode()
    if isinstance(value, datetime.datetime):
        stamp = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
        return int(stamp.timestamp())
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(item) for item in value]
    return str(value)
