"""Parsing request bodies and parameters into typed values, with a 4xx ApiError for anything wrong."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

import msgpack
from aiohttp import web

from api.app_keys import CONFIG
from api.errors import ApiError
from api.json_codec import json_value
from cluster.queues.queue_limits import INT64_MAX
from metadata_state.vhost_names import DEFAULT_VHOST, qualified
from quorumq.moments import epoch_ms

MSGPACK = "application/msgpack"
QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]*")  # full-matched: no trailing newline
Encoding = Literal["utf8", "base64"]
"""How a message body is given in JSON: as text, or as base64 text of raw bytes."""
ENCODINGS: tuple[str, ...] = get_args(Encoding)
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


VHOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}")  # full-matched


def is_vhost_name(name: str) -> bool:
    """Whether `name` may name a vhost: `/`, or 1-64 letters, digits, '.', '_', ':' and '-' starting with
    a letter or digit (no `/`: decision 0029)."""
    return name == DEFAULT_VHOST or VHOST_NAME.fullmatch(name) is not None


def check_vhost_name(name: str) -> str:
    """`name` when it may name a vhost (`is_vhost_name`), 400 otherwise."""
    if not is_vhost_name(name):
        raise bad(
            f"vhost name {name!r} must be '/' or 1-64 characters of letters, digits, '.', '_', ':' or '-', "
            "starting with a letter or digit"
        )
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
    """The `qualified` name of the queue the path names: `{q}`, of `{vhost}` when the path names one (else
    of the default vhost), each checked against the allowed length and characters."""
    name = check_queue_name(request.match_info["q"], request.app[CONFIG].max_queue_name_length)
    return qualified(check_vhost_name(request.match_info.get("vhost", DEFAULT_VHOST)), name)


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


def is_utf8(text: str) -> bool:
    """Whether `text` is valid UTF-8 text: JSON may carry a lone surrogate ("\\ud800"), which is not."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
