"""Message bodies on the wire: what the client publishes and what a delivery holds.

In msgpack (the client's default) bodies travel as raw bytes; in JSON, bytes travel as base64."""

import binascii
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from quorumq.errors import QuorumqError


@dataclass(frozen=True)
class Message:
    """A message to publish: `body` (bytes or text; a consumer receives it as bytes), optional headers
    (JSON values), per-message `expiration` in milliseconds (counted from the publish) and `delay_ms`,
    how long it waits in the queue before it is ready (delayed delivery; every node at queue operations
    version 5), and `priority` (0 to 255; the queue serves its higher levels first and takes one above its
    top, 31 or `x-max-priority`, as the top; every node at queue operations version 6), and `message_id`
    (AMQP's; a queue with `x-dedupe-window` does not enqueue again a message whose id it took within the
    window, and answers its publish with the first one's id), and `group` (1 to 255 bytes of UTF-8, kept
    as the header `x-group-id`; a queue with `x-message-groups` hands out one message of a group at a
    time, in the group's order; every node at queue operations version 13)."""

    body: bytes | str
    headers: dict[str, Any] | None = None
    expiration: int | None = None
    delay_ms: int | None = None
    priority: int = 0
    message_id: str | None = None
    group: str | None = None


GROUP_HEADER = "x-group-id"
"""The header a message's group travels in."""

Publishable = bytes | str | Message


@dataclass(frozen=True)
class Delivery:
    """A message handed to a consumer (or returned by get): `id` settles it, `body` is always bytes.

    `delivery_count` counts the failed deliveries before this one (what `x-delivery-limit` compares),
    `acquired_count` every hand-out before this one (`redelivered` when above 0). `seq` (a durable
    consumer's delivery sequence number) and `published_at` (enqueue time, ms since the epoch) are set
    when the server reports them; `priority` is the level the queue keeps the message at, `group` the
    message's group (its header `x-group-id`), if it has one."""

    id: int
    body: bytes
    headers: dict[str, Any] = field(default_factory=dict)
    delivery_count: int = 0
    redelivered: bool = False
    seq: int | None = None
    published_at: int | None = None
    acquired_count: int = 0
    priority: int = 0

    @property
    def group(self) -> str | None:
        value = self.headers.get(GROUP_HEADER)
        return value if isinstance(value, str) else None

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (invalid bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")


D = TypeVar("D", bound=Delivery)


def encode_message(message: Publishable, *, packed: bool = False) -> dict[str, Any]:
    """The map the publish endpoint expects for one message: for msgpack (`packed`) a body goes as it is
    (bytes as bin, str as str), for JSON bytes go as base64."""
    if isinstance(message, Message):
        body, headers, expiration, delay = message.body, message.headers, message.expiration, message.delay_ms
        priority, message_id, group = message.priority, message.message_id, message.group
    else:  # a bare body, the common case: no Message is built for it
        body, headers, expiration, delay, priority, message_id, group = (
            message,
            None,
            None,
            None,
            0,
            None,
            None,
        )
    if isinstance(body, bytes | bytearray | memoryview):
        wire: dict[str, Any] = (
            {"body": body}
            if packed
            else {"body": binascii.b2a_base64(body, newline=False).decode("ascii"), "encoding": "base64"}
        )
    elif isinstance(body, str):
        wire = {"body": body} if packed else {"body": body, "encoding": "utf8"}
    else:
        raise TypeError(f"a message body must be bytes or str, not {type(body).__name__}")
    if headers:
        wire["headers"] = headers
    if expiration is not None:
        wire["expiration"] = expiration
    if delay is not None:
        wire["delay"] = delay
    if priority:
        wire["priority"] = priority
    if message_id is not None:
        wire["message_id"] = message_id
    if group is not None:
        wire["group"] = group
    return wire


def nack_body(
    ids: list[int], requeue: bool, failed: bool, reason: str | None, delay_ms: int | None = None
) -> dict[str, Any]:
    """The body of a nack: `failed`, `reason` and `delay` only when not at their defaults (so a node
    that predates them reads every other nack)."""
    body: dict[str, Any] = {"ids": ids, "requeue": requeue}
    if not failed:
        body["failed"] = False
    if reason is not None:
        body["reason"] = reason
    if delay_ms is not None:
        body["delay"] = delay_ms
    return body


def as_message_list(messages: Publishable | Iterable[Publishable]) -> list[Publishable]:
    """Accept one message or an iterable of them (a lone bytes/str is one message, not many)."""
    if isinstance(messages, bytes | str | Message):
        return [messages]
    return list(messages)


def decode_body(body: str, encoding: str) -> bytes:
    """The raw bytes of a body received with the given wire encoding."""
    if encoding == "base64":
        try:
            return binascii.a2b_base64(body, strict_mode=True)
        except (binascii.Error, ValueError) as exc:
            raise QuorumqError(0, "bad_response", f"invalid base64 body: {exc}") from exc
    if encoding == "utf8":
        return body.encode("utf-8")
    raise QuorumqError(0, "bad_response", f"unknown body encoding {encoding!r}")


def decode_delivery(wire: dict[str, Any], make: Callable[..., D]) -> D:
    """A Delivery (as `make`, e.g. Delivery itself, builds it from the fields) from one element of the
    deliveries/get/log answers."""
    try:
        return make(
            id=int(wire["id"]),
            body=_body_of(wire),
            headers=dict(wire.get("headers") or {}),
            delivery_count=int(wire.get("delivery_count", 0)),
            redelivered=bool(wire.get("redelivered", False)),
            seq=_optional_int(wire.get("seq")),
            published_at=_optional_int(wire.get("published_at")),
            acquired_count=int(wire.get("acquired_count", 0)),
            priority=int(wire.get("priority", 0)),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise QuorumqError(0, "bad_response", f"malformed delivery {wire!r}: {exc}") from exc


def decode_deliveries(payload: Any, make: Callable[..., D]) -> list[D]:
    """Deliveries (built by `make`) from an answer that is a list of them (or an object holding
    `deliveries`)."""
    items = payload.get("deliveries") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise QuorumqError(0, "bad_response", f"expected a list of deliveries, got {payload!r}")
    return [decode_delivery(item, make) for item in items]


def _body_of(wire: dict[str, Any]) -> bytes:
    """A delivery's raw body: as it is from msgpack (bin), decoded from JSON's text or base64."""
    body = wire["body"]
    return body if isinstance(body, bytes) else decode_body(body, wire.get("encoding", "utf8"))


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)
