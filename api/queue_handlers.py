"""Handlers for queues and their messages: declare, stats, delete, purge, publish, get, settle."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import aiohttp
from aiohttp import web

from api.app_keys import FORWARD_SESSION, METRICS, NODE
from api.auth import Access, principal, require, vouch
from api.deliveries import deliveries_response
from api.errors import ApiError
from api.forwarding import client_node, on_meta_leader, on_queue_leader
from api.limits import check_message_headers
from api.validation import (
    MAX_POLL,
    bad,
    check_queue_name,
    field_bool,
    field_int,
    field_since,
    field_str,
    json_object,
    message_ids,
    publish_object,
    published_messages,
    query_flag,
    query_int,
    queue_name,
)
from cluster.node import Node
from cluster.queue_leader import QueueLeader
from cluster.queue_replica import AutoAcked
from queue_state.arguments import INT64_MAX, ArgumentError, parse_arguments
from queue_state.commands import Discard, Get, Purge, Return, Settle, UpdateConfig
from queue_state.effects import Deliveries, Duplicate, Enqueued, Failure, Purged, Rejected

MAX_GET = 1000


def queue_json(node: Node, name: str, service: QueueLeader | None) -> dict[str, Any]:
    """A queue's definition and, from a local replica, its statistics."""
    info = node.queue_info(name)
    online = [m for m in info.members if m == node.name or node.transport.peers().get(m)]
    arguments = service.replica.machine.config.to_arguments() if service is not None else info.arguments
    result: dict[str, Any] = {
        "name": name,
        "arguments": arguments,
        "leader": node.queue_leader(name),
        "members": info.members,
        "online": online,
    }
    if service is not None:
        stats = service.replica.machine.stats()
        result.update(
            messages=stats.messages,
            messages_ready=stats.messages_ready,
            messages_unacknowledged=stats.messages_unacknowledged,
            messages_dlx=stats.dlx_pending,
            message_bytes=stats.message_bytes,
            consumers=stats.consumers,
            dead_lettered=dict(stats.dead_lettered),
            dropped=dict(stats.dropped),
            dead_letter_bytes=stats.message_bytes_dlx,
            next_id=service.replica.machine.next_id,
        )
    return result


@on_meta_leader
async def declare_queue(request: web.Request) -> web.StreamResponse:
    """PUT /api/queues/{q}: 201 created, 204 already there with the same arguments, 409 otherwise."""
    name = queue_name(request)
    body = await json_object(request, optional=True)
    unknown = set(body) - {"arguments"}
    if unknown:
        raise bad(f"unknown fields {sorted(unknown)}")
    arguments = body.get("arguments", {})
    if not isinstance(arguments, dict):
        raise bad("arguments must be an object")
    _check_dead_letter_target(request, name, arguments)
    outcome = await request.app[NODE].declare(name, arguments, client_node(request))
    if outcome == "created":
        return web.json_response({"queue": name}, status=201)
    return web.Response(status=204)


RUNTIME_ARGUMENTS = frozenset(
    {
        "x-dead-letter-queue",
        "x-dead-letter-strategy",
        "x-max-length",
        "x-max-length-bytes",
        "x-overflow",
        "x-delivery-limit",
        "x-message-ttl",
        "x-expires",
        "x-lease-period",
        "x-quorum-target-group-size",
    }
)


@on_queue_leader
async def update_queue(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """PATCH /api/queues/{q}: change arguments at runtime, like a RabbitMQ policy (null removes one).

    Leaving at-least-once dead-lettering drops the pending dead letters, as RabbitMQ does; the
    queue's `dropped` stats count them under `dead_letter_strategy_changed`.
    """
    body = await json_object(request)
    unknown = set(body) - {"arguments"}
    changes = body.get("arguments")
    if unknown or not isinstance(changes, dict) or not changes:
        raise bad('body must be {"arguments": {...}} with at least one argument')
    fixed = sorted(set(changes) - RUNTIME_ARGUMENTS)
    if fixed:
        raise bad(f"arguments {fixed} cannot be changed at runtime; declare a new queue")
    _check_dead_letter_target(request, service.name, changes)
    merged = {**service.replica.machine.config.to_arguments(), **changes}
    try:
        config = parse_arguments({k: v for k, v in merged.items() if v is not None})
    except ArgumentError as exc:
        raise bad(f"argument {exc.argument}: {exc.reason}") from exc
    await request.app[NODE].submit(service, UpdateConfig(service.now_ms(), config))
    return web.json_response(queue_json(request.app[NODE], service.name, service))


def _check_dead_letter_target(request: web.Request, queue: str, arguments: dict[str, Any]) -> None:
    """Dead-lettering publishes into the `x-dead-letter-queue` being set: its name must be valid and the
    caller needs write permission on it (403 otherwise). Absent, null (removed) or not a string (400
    from the argument parser) there is nothing to check."""
    target = arguments.get("x-dead-letter-queue")
    if isinstance(target, str) and target:
        check_queue_name(target, request.app[NODE].config.max_queue_name_length)
        require(principal(request), Access.WRITE, target, f" (the dead-letter target of '{queue}')")


@on_queue_leader
async def get_queue(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """GET /api/queues/{q}."""
    return web.json_response(queue_json(request.app[NODE], service.name, service))


async def list_queues(request: web.Request) -> web.StreamResponse:
    """GET /api/queues: the queues the caller may see (`Principal.lists`); local replicas answer for
    themselves, other queues are asked of their leader."""
    node: Node = request.app[NODE]
    caller = principal(request)
    names = sorted(name for name in node.meta.state.queues if caller.lists(name))
    results = await asyncio.gather(*(_queue_anywhere(request, node, n) for n in names))
    return web.json_response([r for r in results if r is not None])


async def _queue_anywhere(request: web.Request, node: Node, name: str) -> dict[str, Any] | None:
    service = node.queues.get(name)
    if service is not None:
        return queue_json(node, name, service)
    url = node.node_http(node.queue_leader(name))
    if url is not None:
        session: aiohttp.ClientSession = request.app[FORWARD_SESSION]
        try:
            queue_url = f"{url}/api/queues/{name}"
            async with session.get(queue_url, headers=await vouch(request, "GET", queue_url)) as answer:
                if answer.status == 200:
                    return await answer.json()
        except (aiohttp.ClientError, TimeoutError):
            pass
    return queue_json(node, name, None)


async def delete_queue(request: web.Request) -> web.StreamResponse:
    """DELETE /api/queues/{q}[?if_empty=true][&if_unused=true]: a guarded delete is decided by the
    queue's leader in the queue's log (`Node.delete_if`), a plain one by the metadata leader."""
    if query_flag(request, "if_empty") or query_flag(request, "if_unused"):
        return await _delete_guarded(request)
    return await _delete(request)


@on_meta_leader
async def _delete(request: web.Request) -> web.StreamResponse:
    await request.app[NODE].delete(queue_name(request))
    return web.Response(status=204)


@on_queue_leader
async def _delete_guarded(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    if_empty, if_unused = query_flag(request, "if_empty"), query_flag(request, "if_unused")
    await request.app[NODE].delete_if(service, if_empty, if_unused)
    return web.Response(status=204)


@on_queue_leader
async def purge_queue(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """DELETE /api/queues/{q}/contents: remove every ready message."""
    reply = await request.app[NODE].submit(service, Purge(service.now_ms()))
    count = reply.count if isinstance(reply, Purged) else 0
    return web.json_response({"purged": count})


@on_queue_leader
async def publish(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """POST /api/queues/{q}/messages: 201 with ids once a majority has the messages.

    A seq too old for the publisher's dedup window to tell whether it was enqueued is 409 `seq_too_old`
    (nothing enqueued). The body is JSON, or msgpack (`Content-Type: application/msgpack`, bodies as
    bin); the answer is JSON."""
    node: Node = request.app[NODE]
    body = await publish_object(request)
    unknown = set(body) - {"messages", "publisher", "seq"}
    if unknown:
        raise bad(f"unknown fields {sorted(unknown, key=str)}")
    messages = published_messages(body, node.config.max_message_bytes)
    for index, (message, _) in enumerate(messages):
        check_message_headers(index, message.headers, node.config)
    publisher = field_str(body, "publisher")
    seq = field_int(body, "seq", None)
    if (publisher is None) != (seq is None):
        raise bad("publisher and seq go together")
    started = time.perf_counter()
    reply = await node.publish(service.name, messages, publisher, seq)
    metrics = request.app[METRICS]
    metrics.confirm_seconds.observe(time.perf_counter() - started)
    if isinstance(reply, Rejected):
        raise ApiError(507, "reject-publish", f"queue '{service.name}' is full: {reply.reason}")
    if isinstance(reply, Failure):
        raise ApiError(409, reply.code, reply.reason)
    if isinstance(reply, Enqueued | Duplicate):
        ids = list(reply.ids or [])
        metrics.published.labels(service.name).inc(len(ids))
        return web.json_response({"ids": ids, "duplicate": isinstance(reply, Duplicate)}, status=201)
    if isinstance(reply, Failure):  # sealed for a delete
        raise ApiError(409, reply.code, reply.reason)
    raise ApiError(500, "internal_error", f"unexpected reply {reply!r}")


@on_queue_leader
async def browse(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """GET /api/queues/{q}/messages?from=&to=&limit=: the messages the queue holds, ready or checked
    out, with ids from `from` (default 0) to below `to` (default: no bound), lowest id first, at most
    `limit` (default 1000, up to 10000), as deliveries.

    A read from the leader's applied state: nothing is delivered, counted or moved. Page with
    `from` = the last id + 1. Costs a scan of the queue per page (for reading a dead-letter queue)."""
    first = query_int(request, "from", 0)
    end = query_int(request, "to", INT64_MAX)
    limit = query_int(request, "limit", MAX_GET, maximum=MAX_POLL)
    deliveries = service.replica.machine.browse(first, end, limit)
    return deliveries_response(request, service.replica.bodies.with_bodies(deliveries))


@on_queue_leader
async def basic_get(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """POST /api/queues/{q}/get: up to `count` messages, auto-acked or held for a manual ack.

    With `since` (epoch ms or ISO-8601), only messages enqueued at or after it are returned.
    """
    body = await json_object(request, optional=True)
    count = field_int(body, "count", 1, minimum=1)
    assert count is not None
    if count > MAX_GET:
        raise bad(f"count must be <= {MAX_GET}")
    ack = field_str(body, "ack", "manual")
    if ack not in ("manual", "auto"):
        raise bad("ack must be 'manual' or 'auto'")
    holder = f"get-{uuid.uuid4().hex}"
    now = service.now_ms()
    if ack == "manual":
        service.sessions.open(holder, service.consumer_timeout_ms, now)
    since = field_since(body)
    reply = await request.app[NODE].submit(service, Get(now, holder, count, ack == "auto", since))
    if isinstance(reply, AutoAcked):
        return deliveries_response(request, reply.messages)
    deliveries = reply.deliveries if isinstance(reply, Deliveries) else ()
    if not deliveries:
        service.sessions.close(holder)
    return deliveries_response(request, service.replica.bodies.with_bodies(deliveries))


async def settle(request: web.Request, service: QueueLeader, consumer: str | None) -> web.StreamResponse:
    """Ack (settle) or nack (return, or discard with requeue=false) delivered messages."""
    body = await json_object(request)
    ids = message_ids(body)
    now = service.now_ms()
    kind = request.path.rsplit("/", 1)[-1]
    if kind == "ack":
        command: Any = Settle(now, ids, consumer)
    elif field_bool(body, "requeue", True):
        command = Return(now, ids, consumer)
    else:
        command = Discard(now, ids, consumer)
    if consumer is not None:
        service.sessions.touch(consumer, now)
    reply = await request.app[NODE].submit(service, command)
    if isinstance(reply, Failure) and reply.code == "unknown_consumer":
        raise ApiError(404, "not_found", reply.reason)
    request.app[METRICS].settled.labels(service.name, kind).inc(len(ids))
    if isinstance(reply, Failure):  # e.g. a retried ack of ids already settled: nothing to undo
        return web.json_response({"ok": True, "warning": reply.reason})
    return web.json_response({"ok": True})


@on_queue_leader
async def settle_got(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """POST /api/queues/{q}/ack and /nack: settle messages obtained by a manual-ack get."""
    return await settle(request, service, None)
