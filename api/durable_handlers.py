"""Handlers for durable consumers (Spark): register, check out, read the delivery log, settle below.

A durable consumer's checkouts are numbered by its delivery sequence in the replicated queue state, so
any leader answers a log read with the same rows; the consumer never times out. Cancelling one is the
consumers' DELETE.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, ClassVar

from aiohttp import web
from msgspec import Meta

from api.access import Access
from api.app_keys import CONFIG
from api.auth import principal
from api.consumer_options import ConsumerRequest
from api.consumer_owners import own_consumer
from api.deliveries import deliveries_response
from api.endpoints import CONSUMER, parameter, route
from api.forwarding import on_queue_leader
from api.request_bodies import Moment, RequestBody, read_body_as
from api.schemas import DELIVERIES
from api.validation import MAX_POLL, bad, check_durable_name, moment_ms, query_int
from cluster.queues.consumer_names import OWNER_MARK
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_limits import INT64_MAX
from cluster.queues.queue_results import Position

MAX_CHECKOUT = 10000


class Checkout(RequestBody):
    """A durable consumer's checkout."""

    optional: ClassVar[bool] = True
    max: Annotated[
        Annotated[int, Meta(ge=0, le=MAX_CHECKOUT)] | None, Meta(description="messages to number (default 0)")
    ] = None
    since: Annotated[
        Moment | None, Meta(description="only messages enqueued at or after this time: epoch ms or ISO-8601")
    ] = None
    max_bytes: Annotated[
        Annotated[int, Meta(ge=1, le=INT64_MAX)] | None,
        Meta(description="their bodies add up to at most this (the first always)"),
    ] = None


class SettleBelow(RequestBody, forbid_unknown_fields=False):
    """A durable consumer's settle (other fields are ignored)."""

    below: Annotated[int, Meta(ge=0, le=INT64_MAX, description="settle every delivery numbered below")]


async def register_durable(request: web.Request, queue: QueueDoor, body: ConsumerRequest) -> web.Response:
    """POST /api/queues/{q}/consumers with {"durable": true, "name": c}: 201 with the sequence position.

    Registering an existing durable consumer again is allowed and changes nothing. Its name is checked
    as a queue name is (`check_durable_name`)."""
    extras = body.durable_extras()
    if extras:
        raise bad(f"unknown fields {extras} for a durable consumer (it never times out)")
    name = body.name
    if not name:
        raise bad("a durable consumer needs a non-empty string name")
    check_durable_name(name, request.app[CONFIG].max_queue_name_length)
    position = await queue.register_durable(own_consumer(queue, principal(request), name))
    return _answer(position, name, status=201)


@route(
    "POST",
    CONSUMER + "/checkout",
    access=Access.READ,
    summary="durable consumer: number more messages (since a time, within a byte budget)",
    responses={"200": "sequence position"},
    body=Checkout,
    about="durable consumers with a delivery sequence (the Spark source)",
)
@on_queue_leader
async def checkout(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{c}/checkout {"max": n, "since": t, "max_bytes": b}: number up to
    n more ready messages, only those enqueued at or after `since` (epoch ms or ISO-8601) when given,
    while their bodies add up to at most `max_bytes` (the first one always).

    Registers the consumer if it is unknown (then its sequence starts again at 0), so its name must be
    one a durable consumer may have."""
    body = await read_body_as(request, Checkout)
    name = request.match_info["tag"]
    check_durable_name(name.rpartition(OWNER_MARK)[0] or name, request.app[CONFIG].max_queue_name_length)
    owned = own_consumer(queue, principal(request), name)
    since = moment_ms(body.since, "since")
    return _answer(await queue.durable_checkout(owned, body.max or 0, since, body.max_bytes), name)


@route(
    "POST",
    CONSUMER + "/settle",
    access=Access.READ,
    summary="durable consumer: settle below a sequence number",
    responses={"200": "sequence position"},
    body=SettleBelow,
)
@on_queue_leader
async def settle_below(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{c}/settle {"below": n}: settle every delivery numbered below n."""
    below = (await read_body_as(request, SettleBelow)).below
    name = request.match_info["tag"]
    owned = own_consumer(queue, principal(request), name)
    return _answer(await queue.durable_settle(owned, below), name)


@route(
    "GET",
    CONSUMER + "/log",
    access=Access.READ,
    summary="durable consumer: read deliveries by sequence number",
    responses={"200": "deliveries", "409": "log gap"},
    content={"200": DELIVERIES},
    query=(
        parameter("from", {"type": "integer", "minimum": 0}),
        parameter("to", {"type": "integer", "minimum": 0}),
    ),
)
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
