"""Limits on hostile or careless requests, each with a clear 4xx before any work is done.

- a request body must arrive within `request_read_timeout_ms` (408) and fit `max_request_bytes` (413)
  for a publish, CONTROL_BODY_BYTES (or less, `max_request_bytes`) for any other route (W5);
- a queue name in the path longer than `max_queue_name_length` is 414, other characters than the
  allowed ones 400 (`api.validation.check_queue_name`, run by the auth middleware before any
  permission pattern sees the name);
- a queue accepts at most `max_consumers_per_queue` consumers (429, checked wherever a replica is);
- the cluster holds at most `max_exchanges` declared exchanges and `max_bindings` bindings (429, checked
  on the metadata leader before a new one is proposed): every node rebuilds its routing table from them
  at each change, and a headers exchange tests its bindings one by one per message;
- a published message carries at most `max_message_headers` headers (422) of at most
  `max_header_bytes` as JSON (413), holding only values both JSON and msgpack can carry (400).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
from aiohttp import web

from api.app_keys import CONFIG, METADATA, QUEUES
from api.endpoints import QUEUE, in_vhost
from api.errors import ApiError
from api.validation import queue_name
from cluster.config import NodeConfig

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CONSUMERS_ROUTES = (QUEUE + "/consumers", in_vhost(QUEUE + "/consumers"))
PUBLISH_ROUTES = (QUEUE + "/messages", in_vhost(QUEUE + "/messages"))
CONTROL_BODY_BYTES = 1024 * 1024
"""The largest body of a request other than a publish: what it decodes to costs little (W5)."""


@web.middleware
async def limits_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Enforce the request-level limits, then run the handler."""
    resource = request.match_info.route.resource
    canonical = resource.canonical if resource else None
    publishes = request.method == "POST" and canonical in PUBLISH_ROUTES
    if not publishes:
        _check_control_body(request, request.content_length)
    body = await read_body(request)
    if not publishes:
        _check_control_body(request, len(body))
    if request.method == "POST" and canonical in CONSUMERS_ROUTES:
        check_consumer_room(request.app, queue_name(request))
    return await handler(request)


async def read_body(request: web.Request) -> bytes:
    """The request body (b"" without one), which must arrive within `request_read_timeout_ms` (408);
    aiohttp keeps it, so later reads cost nothing. A body that came in whole with the headers (most do)
    is taken without a timer."""
    if not request.body_exists:
        return b""
    if request.content.is_eof():
        return await request.read()
    try:
        async with asyncio.timeout(request.app[CONFIG].request_read_timeout_ms / 1000):
            return await request.read()
    except TimeoutError as exc:
        raise ApiError(408, "request_timeout", "the request body did not arrive in time") from exc


def _check_control_body(request: web.Request, size: int | None) -> None:
    """413 when a body of `size` bytes is beyond what a request other than a publish may carry (its
    Content-Length is checked before it is read; a chunked one once it is, still before it is decoded)."""
    limit = min(CONTROL_BODY_BYTES, request.app[CONFIG].max_request_bytes)
    if size is not None and size > limit:
        raise ApiError(413, "too_large", f"the body of this request is at most {limit} bytes, not {size}")


def check_consumer_room(app: web.Application, queue: str) -> None:
    """429 when `queue` already has `max_consumers_per_queue` consumers (as a local replica knows)."""
    local = app[QUEUES].hosted_door(queue)
    if local is None:
        return  # no local replica: the leader this request is forwarded to checks
    consumers = local.stats().consumers
    limit = app[CONFIG].max_consumers_per_queue
    if consumers >= limit:
        raise ApiError(
            429, "too_many_consumers", f"queue '{queue}' already has {consumers} consumers (limit {limit})"
        )


def check_routing_room(app: web.Application, exchanges: int = 0, bindings: int = 0) -> None:
    """429 when adding `exchanges` exchanges or `bindings` bindings would pass `max_exchanges` or
    `max_bindings` (as this node, the metadata leader, applied them)."""
    config, metadata = app[CONFIG], app[METADATA]
    if exchanges and metadata.exchange_count + exchanges > config.max_exchanges:
        raise ApiError(429, "too_many_exchanges", f"the cluster holds its {config.max_exchanges} exchanges")
    if bindings and metadata.binding_count + bindings > config.max_bindings:
        raise ApiError(429, "too_many_bindings", f"the cluster holds its {config.max_bindings} bindings")


def check_message_headers(index: int, headers: dict[str, Any], config: NodeConfig) -> None:
    """Reject the headers of published message `index` beyond the configured count (422) or size (413)."""
    if not headers:
        return  # the common case: nothing to measure (serialising it was 9% of a publishing leader)
    if len(headers) > config.max_message_headers:
        raise ApiError(
            422,
            "too_many_headers",
            f"messages[{index}] has {len(headers)} headers; the limit is {config.max_message_headers}",
        )
    try:
        size = len(json.dumps(headers, separators=(",", ":")))  # also: JSON readers can be given them
        msgpack.packb(headers)  # and they can be stored (no lone surrogate, no integer beyond 64 bits)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ApiError(400, "bad_request", f"messages[{index}].headers must hold JSON values: {exc}") from exc
    if size > config.max_header_bytes:
        raise ApiError(
            413,
            "too_large",
            f"messages[{index}].headers are {size} bytes; the limit is {config.max_header_bytes}",
        )
