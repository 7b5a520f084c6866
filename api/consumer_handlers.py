"""Handlers for consumers: list, register, long-poll deliveries, ack/nack, cancel. A consumer is its
registering user's (`consumer_owners`)."""

from __future__ import annotations

from dataclasses import asdict

from aiohttp import web

from api.access import Access
from api.app_keys import METRICS
from api.auth import principal
from api.consumer_options import ConsumerRequest
from api.consumer_owners import own_consumer
from api.deliveries import deliveries_response, max_bytes_query
from api.durable_handlers import register_durable
from api.endpoints import CONSUMER, QUEUE, parameter, route
from api.forwarding import on_queue_leader
from api.queue_handlers import settle, touch
from api.request_bodies import read_body_as
from api.schemas import DELIVERIES, MAX_BYTES
from api.settle_options import Ack, Nack, Touch
from api.validation import MAX_POLL, MAX_WAIT_S, query_number
from cluster.queues.queue_door import QueueDoor

TAG_SHOWN = 8
"""How much of a consumer's tag the list shows: enough to tell consumers apart, too little to use one."""
ENDED = "the consumer was ended by its leader (error consumer_timeout or consumer_idle)"
POLL_QUERY = (
    parameter("max", {"type": "integer", "minimum": 0, "maximum": MAX_POLL}),
    parameter("wait", {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S}),
    parameter("max_bytes", MAX_BYTES),
)


@route(
    "GET",
    QUEUE + "/consumers",
    access=Access.READ,
    summary="the queue's consumers: tag (its first 8 characters; a durable consumer's whole name), prefetch,"
    " priority, active, unacknowledged, timeout_ms, since_ms, auto_ack, durable",
    responses={"200": "consumers"},
    about=(
        "the queue's consumers (read permission): prefetch, priority, active, unacknowledged, "
        "timeouts, `auto_ack`, durable; a tag shown by its first 8 characters only; a "
        "consumer answers only the user who registered it (and administrators: "
        "docs/operate/security.md)"
    ),
)
@on_queue_leader
async def list_consumers(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/consumers: every consumer of the queue, durable ones last. Only the first
    characters of a consumer's tag are shown (a durable consumer's name, its owner's choice, whole)."""
    listed = []
    for consumer in queue.consumer_list():
        row = asdict(consumer)
        if not consumer.durable:
            row["tag"] = consumer.tag[:TAG_SHOWN] + "..."
        listed.append(row)
    return web.json_response(listed)


@route(
    "POST",
    QUEUE + "/consumers",
    access=Access.READ,
    summary="register a consumer",
    responses={"201": "consumer tag", "409": "the queue is being deleted", "429": "too many consumers"},
    body=ConsumerRequest,
    about=(
        '`{"prefetch", "priority", "timeout", "auto_ack"}` -> 201 `{"consumer": tag, '
        "\"hold_ms\"}`; `timeout` is the consumer's own consumer timeout (ms; else the queue's "
        "`x-consumer-timeout`, else the node's, 30 minutes): a delivery it holds that long "
        "without an ack, nack or touch ends it, and its next request answers 410 "
        '`consumer_timeout` (docs/internals/queue_state.md, "Holding"); a consumer not heard '
        "from (no poll, ack, nack or touch) for the node's idle timeout (60 s) ends too, what "
        "it holds returning as plain returns (410 `consumer_idle`: its lease, "
        'docs/internals/cluster.md, "Holders"), so `hold_ms` is the shortest of the three; '
        '`"auto_ack": true` is AMQP\'s no-ack: what each poll answers is settled before it is '
        "answered (at most once; needs every node at queue operations version 9)"
    ),
)
@on_queue_leader
async def register_consumer(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers: 201 with the new consumer's tag."""
    options = await read_body_as(request, ConsumerRequest)
    if options.durable:
        return await register_durable(request, queue, options)
    tag = await queue.register_consumer(
        options.prefetch,
        options.priority,
        options.timeout,
        options.since_ms,
        options.auto_ack,
        owner=principal(request).name,
    )
    return web.json_response({"consumer": tag, "hold_ms": queue.hold_ms(tag, over_http=True)}, status=201)


@route(
    "POST",
    CONSUMER + "/deliveries",
    access=Access.READ,
    summary="long-poll deliveries (a POST: it changes what the consumer holds)",
    responses={"200": "deliveries", "410": ENDED},
    content={"200": DELIVERIES},
    query=POLL_QUERY,
    about=(
        "long-poll deliveries (`GET` still answers, for older clients); at most `max_bytes` "
        "of bodies (8 MiB by default, up to 64 MiB; the first message always), the rest with "
        "the next poll"
    ),
)
@route(
    "GET",
    CONSUMER + "/deliveries",
    access=Access.READ,
    summary="long-poll deliveries (kept for older clients; as the POST)",
    responses={"200": "deliveries", "410": ENDED},
    content={"200": DELIVERIES},
    query=POLL_QUERY,
)
@on_queue_leader
async def deliveries(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/consumers/{tag}/deliveries?max=&wait=&max_bytes=: long-poll, within the
    answer's byte budget (`api.deliveries`)."""
    limit = int(query_number(request, "max", 100, maximum=MAX_POLL))
    wait = query_number(request, "wait", 1.0, maximum=MAX_WAIT_S)
    rows = await queue.poll(_tag(request, queue), limit, wait, max_bytes_query(request))
    request.app[METRICS].count_delivered(queue.name, rows)
    return deliveries_response(request, rows)


@route(
    "POST",
    CONSUMER + "/nack",
    access=Access.READ,
    summary="return or discard deliveries",
    responses={"200": "returned", "410": ENDED},
    body=Nack,
    about=(
        'settle / return (`"failed": false`: a plain return, not counted toward '
        '`x-delivery-limit`; `"delay": ms`: it waits that long before it is ready again; '
        '`"requeue": false` discards or dead-letters, with an optional `"reason"` kept in '
        "`x-death` as `reason-text`)"
    ),
)
@route(
    "POST",
    CONSUMER + "/ack",
    access=Access.READ,
    summary="settle deliveries",
    responses={"200": "settled", "410": ENDED},
    body=Ack,
)
@on_queue_leader
async def settle_consumer(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{tag}/ack and /nack."""
    return await settle(request, queue, _tag(request, queue))


@route(
    "POST",
    CONSUMER + "/touch",
    access=Access.READ,
    summary="extend the hold of deliveries: each counts from now as just handed out",
    responses={
        "200": "touched, with hold_ms",
        "409": "a node reads no touches yet (upgrade_in_progress)",
        "410": ENDED,
    },
    body=Touch,
    about=(
        '`{"ids"}`: lease extension for slow work; each id counts from now as just handed out '
        '-> 200 `{"hold_ms"}` (the client\'s `message.process()` does it every half hold)'
    ),
)
@on_queue_leader
async def touch_consumer(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{tag}/touch: extend the hold of the consumer's deliveries."""
    return await touch(request, queue, _tag(request, queue))


@route(
    "DELETE",
    CONSUMER,
    access=Access.READ,
    summary="cancel a consumer",
    responses={"204": "cancelled"},
    about="cancel; unacked messages return (a plain return: acquired count + 1)",
)
@on_queue_leader
async def cancel_consumer(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """DELETE /api/queues/{q}/consumers/{tag}: unacked messages return to the queue (a durable
    consumer's deliveries too)."""
    await queue.cancel(_tag(request, queue))
    return web.Response(status=204)


def _tag(request: web.Request, queue: QueueDoor) -> str:
    """The consumer the route names, the caller's own (else UnknownConsumer)."""
    return own_consumer(queue, principal(request), request.match_info["tag"])
