"""Handlers for consumers: list, register, long-poll deliveries, ack/nack, cancel. A consumer is its
registering user's (`consumer_owners`)."""

from __future__ import annotations

from dataclasses import asdict

from aiohttp import web

from api.app_keys import METRICS
from api.auth import principal
from api.consumer_options import consumer_options
from api.consumer_owners import own_consumer
from api.deliveries import deliveries_response, max_bytes_query
from api.durable_handlers import register_durable
from api.forwarding import on_queue_leader
from api.queue_handlers import settle, touch
from api.validation import MAX_POLL, MAX_WAIT_S, json_object, query_number
from cluster.queues.queue_door import QueueDoor

TAG_SHOWN = 8
"""How much of a consumer's tag the list shows: enough to tell consumers apart, too little to use one."""


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


@on_queue_leader
async def register_consumer(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers: 201 with the new consumer's tag."""
    body = await json_object(request, optional=True)
    if body.get("durable") is True:
        return await register_durable(request, queue, body)
    options = consumer_options(body)
    tag = await queue.register_consumer(
        options.prefetch,
        options.priority,
        options.timeout_ms,
        options.since_ms,
        options.auto_ack,
        owner=principal(request).name,
    )
    return web.json_response({"consumer": tag, "hold_ms": queue.hold_ms(tag, over_http=True)}, status=201)


@on_queue_leader
async def deliveries(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/consumers/{tag}/deliveries?max=&wait=&max_bytes=: long-poll, within the
    answer's byte budget (`api.deliveries`)."""
    limit = int(query_number(request, "max", 100, maximum=MAX_POLL))
    wait = query_number(request, "wait", 1.0, maximum=MAX_WAIT_S)
    rows = await queue.poll(_tag(request, queue), limit, wait, max_bytes_query(request))
    request.app[METRICS].count_delivered(queue.name, rows)
    return deliveries_response(request, rows)


@on_queue_leader
async def settle_consumer(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{tag}/ack and /nack."""
    return await settle(request, queue, _tag(request, queue))


@on_queue_leader
async def touch_consumer(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{tag}/touch: extend the hold of the consumer's deliveries."""
    return await touch(request, queue, _tag(request, queue))


@on_queue_leader
async def cancel_consumer(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """DELETE /api/queues/{q}/consumers/{tag}: unacked messages return to the queue (a durable
    consumer's deliveries too)."""
    await queue.cancel(_tag(request, queue))
    return web.Response(status=204)


def _tag(request: web.Request, queue: QueueDoor) -> str:
    """The consumer the route names, the caller's own (else UnknownConsumer)."""
    return own_consumer(queue, principal(request), request.match_info["tag"])
