"""Handlers for durable consumers (Spark): register, check out, read the delivery log, settle below.

A durable consumer's checkouts are numbered by its delivery sequence in the replicated queue state, so
any leader answers a log read with the same rows; the consumer never times out. Cancelling one is the
consumers' DELETE.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aiohttp import web

from api.app_keys import CONFIG
from api.auth import principal
from api.consumer_owners import own_consumer
from api.deliveries import deliveries_response
from api.forwarding import on_queue_leader
from api.validation import (
    MAX_POLL,
    bad,
    check_durable_name,
    field_int,
    field_since,
    field_str,
    json_object,
    query_int,
)
from cluster.queues.consumer_names import OWNER_MARK
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_results import Position

MAX_CHECKOUT = 10000
_REGISTER_FIELDS = {"durable", "name", "prefetch", "priority"}


async def register_durable(request: web.Request, queue: QueueDoor, body: dict[str, Any]) -> web.Response:
    """POST /api/queues/{q}/consumers with {"durable": true, "name": c}: 201 with the sequence position.

    Registering an existing durable consumer again is allowed and changes nothing. Its name is checked
    as a queue name is (`check_durable_name`)."""
    unknown = set(body) - _REGISTER_FIELDS
    if unknown:
        raise bad(f"unknown fields {sorted(unknown)} for a durable consumer (it never times out)")
    name = field_str(body, "name")
    if not name:
        raise bad("a durable consumer needs a non-empty string name")
    check_durable_name(name, request.app[CONFIG].max_queue_name_length)
    position = await queue.register_durable(own_consumer(queue, principal(request), name))
    return _answer(position, name, status=201)


@on_queue_leader
async def checkout(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{c}/checkout {"max": n, "since": t, "max_bytes": b}: number up to
    n more ready messages, only those enqueued at or after `since` (epoch ms or ISO-8601) when given,
    while their bodies add up to at most `max_bytes` (the first one always).

    Registers the consumer if it is unknown (then its sequence starts again at 0), so its name must be
    one a durable consumer may have."""
    body = await json_object(request, optional=True)
    unknown = set(body) - {"max", "since", "max_bytes"}
    if unknown:
        raise bad(f"unknown fields {sorted(unknown)}")
    count = field_int(body, "max", 0)
    assert count is not None
    if count > MAX_CHECKOUT:
        raise bad(f"max must be <= {MAX_CHECKOUT}")
    max_bytes = field_int(body, "max_bytes", None)
    if max_bytes is not None and max_bytes < 1:
        raise bad("max_bytes must be >= 1")
    name = request.match_info["tag"]
    check_durable_name(name.rpartition(OWNER_MARK)[0] or name, request.app[CONFIG].max_queue_name_length)
    owned = own_consumer(queue, principal(request), name)
    return _answer(await queue.durable_checkout(owned, count, field_since(body), max_bytes), name)


@on_queue_leader
async def settle_below(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{c}/settle {"below": n}: settle every delivery numbered below n."""
    body = await json_object(request)
    below = field_int(body, "below", None)
    if below is None:
        raise bad("below is required")
    name = request.match_info["tag"]
    owned = own_consumer(queue, principal(request), name)
    return _answer(await queue.durable_settle(owned, below), name)


@on_queue_leader
async def read_log(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/consumers/{c}/log?from=&to=: the deliveries numbered from..to-1, unchanged.

    Non-destructive. A range this leader has not applied yet waits for one round through the log;
    anything settled, returned or missing is a 409, never a silent gap."""
    start, end = query_int(request, "from"), query_int(request, "to")
    if end - start > MAX_POLL:
        raise bad(f"at most {MAX_POLL} deliveries per read")
    name = own_consumer(queue, principal(request), request.match_info["tag"])
    return deliveries_response(request, await queue.read_durable_log(name, start, end))


def _answer(position: Position, name: str, status: int = 200) -> web.Response:
    """A durable consumer's position, under the name its caller gave it (stored with its owner's:
    `consumer_owners`)."""
    return web.json_response({**asdict(position), "consumer": name}, status=status)
