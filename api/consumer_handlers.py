"""Handlers for consumers: register, long-poll deliveries, ack/nack, cancel."""

from __future__ import annotations

import time
import uuid

from aiohttp import web

from api.app_keys import METRICS, NODE
from api.deliveries import deliveries_response
from api.durable_handlers import cancel_durable, is_durable, register_durable
from api.errors import ApiError
from api.forwarding import on_queue_leader
from api.queue_handlers import settle
from api.validation import MAX_POLL, MAX_WAIT_S, bad, field_int, field_since, json_object, query_number
from cluster.consumer_sessions import ConsumerSession, poll
from cluster.queue_leader import QueueLeader
from queue_state.commands import Cancel, Checkout, Get
from queue_state.effects import Deliveries, Delivery, Failure
from queue_state.machine import QUEUE_DELETING

DEFAULT_PREFETCH = 100
MAX_PREFETCH = 65535


@on_queue_leader
async def register_consumer(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers: 201 with the new consumer's tag."""
    body = await json_object(request, optional=True)
    if body.get("durable") is True:
        return await register_durable(request, service, body)
    unknown = set(body) - {"prefetch", "priority", "timeout", "since"}
    if unknown:
        raise bad(f"unknown fields {sorted(unknown)}")
    prefetch = field_int(body, "prefetch", DEFAULT_PREFETCH, minimum=1)
    priority = field_int(body, "priority", 0, minimum=-(2**31))
    timeout = field_int(body, "timeout", service.consumer_timeout_ms, minimum=1)
    assert prefetch is not None and priority is not None
    if prefetch > MAX_PREFETCH:
        raise bad(f"prefetch must be <= {MAX_PREFETCH}")
    tag = uuid.uuid4().hex
    now = service.now_ms()
    session = service.sessions.open(tag, timeout, now)
    since = field_since(body)
    if since is not None:
        session.since_ms, session.prefetch = since, prefetch
        return web.json_response({"consumer": tag}, status=201)
    reply = await request.app[NODE].submit(service, Checkout(now, tag, prefetch, priority, timeout))
    if isinstance(reply, Failure):
        service.sessions.close(tag)
        raise ApiError(409 if reply.code == QUEUE_DELETING else 400, reply.code, reply.reason)
    return web.json_response({"consumer": tag}, status=201)


def _session(service: QueueLeader, tag: str) -> ConsumerSession:
    """The session of a consumer registered in the queue state, made anew after a leader change."""
    session = service.sessions.get(tag)
    if session is not None:
        return session
    if all(c.name != tag for c in service.replica.machine.consumers()):
        raise ApiError(404, "not_found", f"no consumer '{tag}' on queue '{service.name}'")
    session = service.sessions.open(tag, service.timeout_of(tag), service.now_ms())
    session.offer(service.replica.machine.checked_out(tag))
    return session


@on_queue_leader
async def deliveries(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """GET /api/queues/{q}/consumers/{tag}/deliveries?max=&wait=: long-poll."""
    tag = request.match_info["tag"]
    limit = int(query_number(request, "max", 100, maximum=MAX_POLL))
    wait = query_number(request, "wait", 1.0, maximum=MAX_WAIT_S)
    session = _session(service, tag)
    service.sessions.touch(tag, service.now_ms())
    if session.since_ms is not None:
        taken = await _read_since(request, service, session, max(limit, 1), wait)
    else:
        taken = await poll(session, max(limit, 1), wait)
    service.sessions.touch(tag, service.now_ms())
    request.app[METRICS].delivered.labels(service.name).inc(len(taken))
    return deliveries_response(request, service.replica.bodies.with_bodies(taken))


async def _read_since(
    request: web.Request, service: QueueLeader, session: ConsumerSession, limit: int, wait: float
) -> list[Delivery]:
    """A reader from a time: get what it may hold (prefetch) among messages enqueued since then,
    waiting for newly applied entries until `wait` runs out."""
    deadline = time.monotonic() + wait
    while True:
        room = min(limit, session.prefetch - len(service.replica.machine.checked_out(session.tag)))
        if room > 0:
            command = Get(service.now_ms(), session.tag, room, False, session.since_ms)
            reply = await request.app[NODE].submit(service, command)
            if isinstance(reply, Deliveries) and reply.deliveries:
                return list(reply.deliveries)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return []
        await service.wait_applied(remaining)


@on_queue_leader
async def settle_consumer(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{tag}/ack and /nack."""
    tag = request.match_info["tag"]
    _session(service, tag)
    return await settle(request, service, tag)


@on_queue_leader
async def cancel_consumer(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """DELETE /api/queues/{q}/consumers/{tag}: unacked messages return to the queue."""
    tag = request.match_info["tag"]
    if is_durable(service, tag):
        return await cancel_durable(request, service, tag)
    session = _session(service, tag)
    reply = await request.app[NODE].submit(service, Cancel(service.now_ms(), tag))
    service.sessions.close(tag)
    if isinstance(reply, Failure) and session.since_ms is None:
        raise ApiError(404, reply.code, reply.reason)
    return web.Response(status=204)
