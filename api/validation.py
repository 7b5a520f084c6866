"""Parsing request bodies and parameters into typed values, with a 4xx ApiError for anything wrong."""

from __future__ import annotations

import binascii
import re
from typing import Any

import msgpack
from aiohttp import web

from api.app_keys import CONFIG
from api.errors import ApiError
from api.json_codec import json_value
from cluster.queues.queue_limits import INT64_MAX, MESSAGE_PRIORITY_MAX
from cluster.replication.stored_message import StoredMessage
from quorumq.moments import epoch_ms

MSGPACK = "application/msgpack"
QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]*")  # full-matched: no trailing newline
ENCODINGS = ("utf8", "base64")
MESSAGE_FIELDS = frozenset({"body", "encoding", "headers", "expiration", "delay", "not_before", "priority"})
MAX_BATCH_MESSAGES = 10000
MAX_POLL = 10000
MAX_WAIT_S = 60.0
MAX_VALUES = 1 << 19
"""The most values a msgpack body or frame may hold (each array and map, each element of an array, each
key and each value of a map): decoding stops past them, having made no more than twice as many
objects (W5)."""


def bad(reason: str) -> ApiError:
    """A 400 naming what is wrong."""
    return ApiError(400, "bad_request", reason)


def check_queue_name(name: str, max_length: int) -> str:
    """`name` when it is a valid queue name: 414 beyond `max_length` characters, 400 unless it is
    letters, digits, '.', '_', ':' and '-', starting with a letter or digit."""
    if len(name) > max_length:
        raise ApiError(414, "name_too_long", f"queue names are at most {max_length} characters")
    if not QUEUE_NAME.fullmatch(name):
        raise bad(f"queue name {name!r} must be {_name_rule(max_length)}")
    return name


def check_durable_name(name: str, max_length: int) -> str:
    """`name` when it is a valid durable consumer name: as a queue name, 400 otherwise (W12)."""
    if len(name) > max_length or not QUEUE_NAME.fullmatch(name):
        raise bad(f"a durable consumer's name must be {_name_rule(max_length)}")
    return name


def _name_rule(max_length: int) -> str:
    return (
        f"1-{max_length} characters of letters, digits, '.', '_', ':' or '-', starting with a letter or digit"
    )


def queue_name(request: web.Request) -> str:
    """The `{q}` of the path, checked against the allowed length and characters."""
    return check_queue_name(request.match_info["q"], request.app[CONFIG].max_queue_name_length)


async def json_object(request: web.Request, *, optional: bool = False) -> dict[str, Any]:
    """The request body as a JSON object."""
    if optional and not request.body_exists:  # the body may already be read (limits middleware)
        return {}
    try:
        body = json_value(await request.text())
    except ValueError as exc:
        raise bad(f"body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise bad("body must be a JSON object")
    return body


async def publish_object(request: web.Request) -> dict[str, Any]:
    """A publish body: a JSON object, or a msgpack map when sent as `Content-Type: application/msgpack`."""
    if request.content_type == MSGPACK:
        return msgpack_object(await request.read())
    return await json_object(request)


def msgpack_object(data: bytes, what: str = "body") -> dict[Any, Any]:
    """A msgpack map (keys str or bytes, strings valid UTF-8) of at most MAX_VALUES values (413 beyond,
    400 for one array or map alone beyond); `what` names it in an error."""
    try:
        body = _unpacked(data)
    except _TooManyValues as exc:
        raise ApiError(413, "too_large", f"{what} holds more than {MAX_VALUES} values") from exc
    except (ValueError, TypeError, msgpack.UnpackException) as exc:  # invalid UTF-8 is a ValueError
        raise bad(f"{what} is not valid msgpack: {exc or type(exc).__name__}") from exc
    if not isinstance(body, dict):
        raise bad(f"{what} must be a msgpack map")
    return body


class _TooManyValues(Exception):
    """A msgpack document holds more than MAX_VALUES values."""


def _unpacked(data: bytes) -> Any:
    """`data` unpacked, counting the values of each array and map as it is made and stopping past
    MAX_VALUES. Every value takes a byte at least, so a document no longer than that is unpacked whole."""
    if len(data) <= MAX_VALUES:
        return msgpack.unpackb(data, raw=False)
    made = 0

    def counted(container: Any) -> Any:
        nonlocal made
        made += 1 + len(container) * (2 if isinstance(container, dict) else 1)
        if made > MAX_VALUES:
            raise _TooManyValues
        return container

    return msgpack.unpackb(
        data,
        raw=False,
        list_hook=counted,
        object_hook=counted,
        max_array_len=MAX_VALUES,
        max_map_len=MAX_VALUES // 2,
    )


def field_int(body: dict[str, Any], name: str, default: int | None, *, minimum: int = 0) -> int | None:
    """An optional integer field (booleans are not integers); absent or null, `default`."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(f"{name} must be an integer")
    if value < minimum:
        raise bad(f"{name} must be >= {minimum}")
    if value > INT64_MAX:
        raise bad(f"{name} must be <= {INT64_MAX}")
    return value


def field_str(body: dict[str, Any], name: str, default: str | None = None) -> str | None:
    """An optional string field."""
    value = body.get(name, default)
    if value is not None and not isinstance(value, str):
        raise bad(f"{name} must be a string")
    if value is not None and not is_utf8(value):
        raise bad(f"{name} must be valid UTF-8 text (no lone surrogates)")
    return value


def field_bool(body: dict[str, Any], name: str, default: bool) -> bool:
    """An optional boolean field."""
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise bad(f"{name} must be true or false")
    return value


def field_since(body: dict[str, Any], name: str = "since") -> int | None:
    """An optional time, such as a consumer's `since`: epoch milliseconds or ISO-8601."""
    return moment_ms(body.get(name), name)


def moment_ms(value: object, name: str) -> int | None:
    """The time `value` gives (epoch milliseconds or ISO-8601; None: none) in epoch milliseconds; a 400
    naming field `name` for anything else."""
    if value is None:
        return None
    try:
        return epoch_ms(value)
    except ValueError as exc:
        raise bad(f"{name} must be epoch milliseconds or an ISO-8601 time, got {value!r}") from exc


def message_ids(body: dict[str, Any]) -> tuple[int, ...]:
    """The `ids` list of an ack/nack body."""
    ids = body.get("ids")
    if not isinstance(ids, list) or not ids:
        raise bad("ids must be a non-empty list of message ids")
    if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i <= INT64_MAX for i in ids):
        raise bad("ids must be non-negative 64-bit integers")
    return tuple(ids)


def query_number(request: web.Request, name: str, default: float, *, maximum: float) -> float:
    """A numeric query parameter within [0, maximum]."""
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise bad(f"query parameter {name} must be a number") from exc
    if not 0 <= value <= maximum:
        raise bad(f"query parameter {name} must be between 0 and {maximum:g}")
    return value


def query_int(
    request: web.Request, name: str, default: int | None = None, *, maximum: int = INT64_MAX
) -> int:
    """A non-negative integer query parameter up to `maximum`; required when `default` is None."""
    raw = request.query.get(name)
    if raw is None and default is not None:
        return default
    if raw is None or not raw.isdigit():
        raise bad(f"query parameter {name} must be a non-negative integer")
    value = int(raw)
    if value > maximum:
        raise bad(f"query parameter {name} must be <= {maximum}")
    return value


def query_flag(request: web.Request, name: str) -> bool:
    """A boolean query parameter (`true`/`false`, absent is false)."""
    raw = request.query.get(name, "false").lower()
    if raw not in ("true", "false", "1", "0"):
        raise bad(f"query parameter {name} must be true or false")
    return raw in ("true", "1")


def published_messages(body: dict[str, Any], max_bytes: int) -> list[tuple[StoredMessage, int | None]]:
    """The `messages` of a publish body: decoded bodies, headers and optional expiration (ms).

    A body is a string (utf8, or base64 with `"encoding": "base64"`) or, in msgpack, bin (raw bytes)."""
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise bad("messages must be a non-empty list")
    if len(raw) > MAX_BATCH_MESSAGES:
        raise ApiError(413, "too_large", f"at most {MAX_BATCH_MESSAGES} messages per request")
    return [_published_message(i, m, max_bytes) for i, m in enumerate(raw)]


def published_delays(body: dict[str, Any], now_ms: int) -> list[int | None] | None:
    """Each message's delay in ms, from its `delay` (ms) or its `not_before` (epoch ms or ISO-8601, as
    far ahead of `now_ms`; a time passed is no delay), or None when no message of the (already checked)
    publish body has either: the common case costs one look at each message."""
    messages = body["messages"]
    if not any("delay" in message or "not_before" in message for message in messages):
        return None
    delays = [_delay(index, message, now_ms) for index, message in enumerate(messages)]
    return delays if any(delays) else None  # a delay of 0, or a time passed, is none


def published_priorities(body: dict[str, Any]) -> list[int] | None:
    """Each message's `priority` (0 to 255, as AMQP; absent is 0), or None when no message of the
    (already checked) publish body has one above 0."""
    messages = body["messages"]
    if not any("priority" in message for message in messages):
        return None
    priorities = [_priority(index, message) for index, message in enumerate(messages)]
    return priorities if any(priorities) else None


def _priority(index: int, message: dict[str, Any]) -> int:
    priority = message.get("priority")
    if priority is None:  # null is the default, as for the other optional fields
        return 0
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not 0 <= priority <= MESSAGE_PRIORITY_MAX
    ):
        raise bad(f"{_where(index)}.priority must be an integer from 0 to {MESSAGE_PRIORITY_MAX}")
    return priority


def _delay(index: int, message: dict[str, Any], now_ms: int) -> int | None:
    delay, not_before = message.get("delay"), message.get("not_before")
    if delay is not None and not_before is not None:
        raise bad(f"{_where(index)} gives both delay and not_before")
    if delay is not None:
        if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= INT64_MAX:
            raise bad(f"{_where(index)}.delay must be a non-negative integer (milliseconds)")
        return delay or None
    if not_before is None:
        return None
    try:
        return max(epoch_ms(not_before) - now_ms, 0) or None
    except ValueError as exc:
        raise bad(f"{_where(index)}.not_before must be epoch milliseconds or an ISO-8601 time") from exc


def _published_message(index: int, raw: Any, max_bytes: int) -> tuple[StoredMessage, int | None]:
    # Runs once per published message: the `messages[i]` label is only formatted for an error.
    if not isinstance(raw, dict):
        raise bad(f"{_where(index)} must be an object")
    if not raw.keys() <= MESSAGE_FIELDS:
        raise bad(f"{_where(index)} has unknown fields {sorted(raw.keys() - MESSAGE_FIELDS, key=str)}")
    text = raw.get("body")
    if isinstance(text, bytes):  # msgpack bin: the raw body, stored as binary
        encoding = raw.get("encoding", "base64")
        if encoding != "base64":
            raise bad(f"{_where(index)}.encoding of a binary body must be base64 (or left out)")
        data = text
    elif isinstance(text, str):
        encoding = raw.get("encoding", "utf8")
        data = _text_body(index, text, encoding)
    else:
        raise bad(f"{_where(index)}.body must be a string (or bin in msgpack)")
    if len(data) > max_bytes:
        raise ApiError(413, "too_large", f"{_where(index)} is {len(data)} bytes; the limit is {max_bytes}")
    headers = raw.get("headers", {})
    if not isinstance(headers, dict) or (headers and not all(isinstance(k, str) for k in headers)):
        raise bad(f"{_where(index)}.headers must be an object")
    expiration = raw.get("expiration")
    if expiration is not None and (
        isinstance(expiration, bool) or not isinstance(expiration, int) or not 0 <= expiration <= INT64_MAX
    ):
        raise bad(f"{_where(index)}.expiration must be a non-negative integer (milliseconds)")
    return StoredMessage(data, headers, encoding), expiration


def _text_body(index: int, text: str, encoding: Any) -> bytes:
    """The bytes of a string body: its UTF-8, or what its base64 decodes to."""
    if encoding == "utf8":
        try:
            return text.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800") is valid JSON but not UTF-8
            raise bad(f"{_where(index)}.body is not valid UTF-8 text: {exc.reason}") from exc
    if encoding == "base64":
        try:
            return binascii.a2b_base64(text, strict_mode=True)  # what b64decode(validate=True) runs
        except (binascii.Error, ValueError) as exc:
            raise bad(f"{_where(index)}.body is not valid base64") from exc
    raise bad(f"{_where(index)}.encoding must be one of {', '.join(ENCODINGS)}")


def is_utf8(text: str) -> bool:
    """Whether `text` is valid UTF-8 text: JSON may carry a lone surrogate ("\\ud800"), which is not."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _where(index: int) -> str:
    return f"messages[{index}]"
