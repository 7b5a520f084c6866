"""A publish as the API takes it: its body declared once (`PublishBody`: the checks and the OpenAPI
schema), read and checked on the node the client called (`read_publish`, or `publish_of` for a stream
frame), and run on the queue's leader (`PublishJob.run`), whether the request reached it over HTTP or
was forwarded over the peer transport (`api.forwarded_publish`)."""

from __future__ import annotations

import binascii
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import msgspec
from aiohttp import web
from msgspec import Meta

from api.app_keys import CONFIG, METRICS, WALL_MS
from api.errors import ApiError
from api.limits import check_message_headers
from api.request_bodies import Moment, RequestBody, body_as
from api.validation import Encoding, bad, is_utf8, publish_object
from cluster.config import NodeConfig
from cluster.errors import Overloaded
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_limits import (
    INT64_MAX,
    MAX_DEDUPE_ID_CHARS,
    MAX_GROUP_BYTES,
    MAX_PUBLISH_WAIT_MS,
    MESSAGE_PRIORITY_MAX,
    group_name_problem,
)
from cluster.replication.stored_message import GROUP_HEADER, MESSAGE_ID_HEADER, StoredMessage
from quorumq.moments import epoch_ms

MAX_BATCH_MESSAGES = 10000
Milliseconds = Annotated[int, Meta(ge=0, le=INT64_MAX)]


class PublishedMessage(msgspec.Struct, forbid_unknown_fields=True):
    """One message of a publish: its body and what the queue does with it."""

    body: Annotated[
        Any,
        Meta(
            extra_json_schema={
                "type": "string",
                "description": "text, or base64 text with encoding base64; in msgpack also bin: the raw "
                "body, stored as binary (JSON readers get base64)",
            }
        ),
    ]
    encoding: Encoding | None = None
    headers: dict[str, Any] = {}
    expiration: Annotated[Milliseconds | None, Meta(description="ms it may wait before it expires")] = None
    delay: Annotated[Milliseconds | None, Meta(description="ms it waits in the queue before it is ready")] = (
        None
    )
    not_before: Annotated[
        Moment | None, Meta(description="the time it is ready from (epoch ms or ISO-8601), instead of delay")
    ] = None
    priority: Annotated[
        Annotated[int, Meta(ge=0, le=MESSAGE_PRIORITY_MAX)] | None,
        Meta(
            description="higher levels are served first; above the queue's top (31, or x-max-priority) "
            "taken as the top"
        ),
    ] = None
    message_id: Annotated[
        Annotated[str, Meta(min_length=1, max_length=MAX_DEDUPE_ID_CHARS)] | None,
        Meta(
            description="the message's id (AMQP's message_id, kept as the header x-amqp-message-id); a "
            "queue with x-dedupe-window takes a message whose id it took within the window as a duplicate"
        ),
    ] = None
    group: Annotated[
        str | None,
        Meta(
            description=f"the message's group (1 to {MAX_GROUP_BYTES} bytes of UTF-8, kept as the header "
            f"{GROUP_HEADER}, which may give it instead): a queue with x-message-groups hands out one "
            "message of a group at a time, in order"
        ),
    ] = None


class PublishBody(RequestBody):
    """A publish: its messages, the publisher's id and seq that deduplicate a resend, and how long it
    waits for room in a full reject-publish queue."""

    packed: ClassVar[bool] = True
    messages: Annotated[list[PublishedMessage], Meta(min_length=1)]
    publisher: str | None = None
    seq: Milliseconds | None = None
    wait: Annotated[
        int,
        Meta(
            ge=0,
            le=MAX_PUBLISH_WAIT_MS,
            description="ms a publish to a full reject-publish queue waits for room before it is "
            "answered 507",
        ),
    ] = 0


@dataclass(frozen=True, slots=True)
class PublishJob:
    """The messages (each with its optional expiration in ms), the publisher's id and seq, if any, each
    message's delay in ms when any message has one, each one's priority when any has one, and the ms it
    waits for room in a full reject-publish queue."""

    messages: Sequence[tuple[StoredMessage, int | None]]
    publisher: str | None
    seq: int | None
    delays: Sequence[int | None] | None = None
    priorities: Sequence[int] | None = None
    wait_ms: int = 0

    async def run(self, app: web.Application, queue: QueueDoor) -> dict[str, Any]:
        """Publish on the queue's leader: the 201 answer's body once a majority has the messages."""
        started = time.perf_counter()
        metrics = app[METRICS]
        try:
            published = await queue.publish(
                self.messages,
                self.publisher,
                self.seq,
                self.delays,
                priorities=self.priorities,
                wait_ms=self.wait_ms,
            )
        except Overloaded:
            metrics.overloaded.labels(queue.name).inc()
            raise
        metrics.confirm_seconds.observe(time.perf_counter() - started)
        metrics.count_published(queue.name, len(published.ids))
        answer: dict[str, Any] = {"ids": published.ids, "duplicate": published.duplicate}
        if published.duplicates:
            answer["duplicates"] = published.duplicates
        return answer


async def read_publish(request: web.Request) -> PublishJob:
    """The publish a request's body asks for (JSON, or msgpack), within the node's limits."""
    return publish_of(await publish_object(request), request.app[CONFIG], request.app[WALL_MS]())


def publish_of(body: dict[Any, Any], config: NodeConfig, now_ms: int) -> PublishJob:
    """The publish a publish body (`PublishBody`) asks for, within the node's limits (413 beyond
    MAX_BATCH_MESSAGES messages, or a body beyond the node's `max_message_bytes`); `now_ms` (the node's
    wall clock) turns a `not_before` into a delay."""
    raw = body.get("messages")
    if isinstance(raw, list) and len(raw) > MAX_BATCH_MESSAGES:
        raise ApiError(413, "too_large", f"at most {MAX_BATCH_MESSAGES} messages per request")
    publish = body_as(body, PublishBody, texts_checked=True)  # each text is checked where it is used
    if (publish.publisher is None) != (publish.seq is None):
        raise bad("publisher and seq go together")
    if publish.publisher is not None and not is_utf8(publish.publisher):
        raise bad("publisher must be valid UTF-8 text (no lone surrogates)")
    messages = [_stored(index, message, config) for index, message in enumerate(publish.messages)]
    delays = [_delay(index, message, now_ms) for index, message in enumerate(publish.messages)]
    priorities = [message.priority or 0 for message in publish.messages]
    return PublishJob(
        messages,
        publish.publisher,
        publish.seq,
        delays if any(delays) else None,  # a delay of 0, or a time passed, is none
        priorities if any(priorities) else None,
        publish.wait,
    )


def _stored(index: int, message: PublishedMessage, config: NodeConfig) -> tuple[StoredMessage, int | None]:
    """Message `index` as the queue stores it, with its expiration."""
    body = message.body
    if isinstance(body, bytes):  # msgpack bin: the raw body, stored as binary
        if message.encoding not in (None, "base64"):
            raise bad(f"{_where(index)}.encoding of a binary body must be base64 (or left out)")
        data, encoding = body, "base64"
    elif isinstance(body, str):
        encoding = message.encoding or "utf8"
        data = _text_body(index, body, encoding)
    else:
        raise bad(f"{_where(index)}.body must be a string (or bin in msgpack)")
    if len(data) > config.max_message_bytes:
        raise ApiError(
            413, "too_large", f"{_where(index)} is {len(data)} bytes; the limit is {config.max_message_bytes}"
        )
    check_message_headers(index, message.headers, config)
    headers = _with_group(index, message, _with_message_id(index, message))
    return StoredMessage(data, headers, encoding), message.expiration


def _with_message_id(index: int, message: PublishedMessage) -> dict[str, Any]:
    """Message `index`'s headers, its `message_id` kept as `MESSAGE_ID_HEADER` (400 when a header of that
    name says otherwise, or holds an id longer than MAX_DEDUPE_ID_CHARS)."""
    headers = message.headers
    given = headers.get(MESSAGE_ID_HEADER)
    if message.message_id is None:
        if isinstance(given, str) and len(given) > MAX_DEDUPE_ID_CHARS:
            raise bad(
                f"{_where(index)}.headers.{MESSAGE_ID_HEADER} is longer than {MAX_DEDUPE_ID_CHARS} characters"
            )
        return headers
    if given is not None and given != message.message_id:
        raise bad(f"{_where(index)} gives message_id and a different header {MESSAGE_ID_HEADER}")
    return {**headers, MESSAGE_ID_HEADER: message.message_id}


def _with_group(index: int, message: PublishedMessage, headers: dict[str, Any]) -> dict[str, Any]:
    """`headers` of message `index` with its `group` kept as `GROUP_HEADER` (the field wins over the
    header); 400 naming the field, or the header, when the group it gives cannot name one."""
    if message.group is None:
        given = headers.get(GROUP_HEADER)
        if given is not None and (problem := group_name_problem(given)) is not None:
            raise bad(f"{_where(index)}.headers.{GROUP_HEADER} {problem}")
        return headers
    problem = group_name_problem(message.group)
    if problem is not None:
        raise bad(f"{_where(index)}.group {problem}")
    return {**headers, GROUP_HEADER: message.group}


def _text_body(index: int, text: str, encoding: str) -> bytes:
    """The bytes of a string body: its UTF-8, or what its base64 decodes to."""
    if encoding == "utf8":
        try:
            return text.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800") is valid JSON but not UTF-8
            raise bad(f"{_where(index)}.body is not valid UTF-8 text: {exc.reason}") from exc
    try:
        return binascii.a2b_base64(text, strict_mode=True)  # what b64decode(validate=True) runs
    except (binascii.Error, ValueError) as exc:
        raise bad(f"{_where(index)}.body is not valid base64") from exc


def _delay(index: int, message: PublishedMessage, now_ms: int) -> int | None:
    """The ms message `index` waits before it is ready: its `delay`, or how far its `not_before` is ahead
    of `now_ms` (a time passed is no delay)."""
    if message.not_before is None:
        return message.delay or None
    if message.delay is not None:
        raise bad(f"{_where(index)} gives both delay and not_before")
    try:
        return max(epoch_ms(message.not_before) - now_ms, 0) or None
    except ValueError as exc:
        raise bad(f"{_where(index)}.not_before must be epoch milliseconds or an ISO-8601 time") from exc


def _where(index: int) -> str:
    return f"messages[{index}]"
