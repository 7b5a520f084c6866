"""Handlers for durable consumers (Spark): register, check out, read the delivery log, settle below.

A durable consumer's checkouts are numbered by its delivery sequence in the replicated queue state, so
any leader answers a log read with the same rows; the consumer never times out.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from api.app_keys import NODE
from api.deliveries import deliveries_response
from api.errors import ApiError
from api.forwarding import on_queue_leader
from api.validation import MAX_POLL, bad, field_int, field_since, field_str, json_object, query_int
from cluster.queue_leader import QueueLeader
from queue_state.commands import Cancel, Command, DurableCheckout, DurableSettle, Tick
from queue_state.durable import DurableLogGap
from queue_state.effects import DurablePosition, Failure
from queue_state.machine import QUEUE_DELETING

MAX_CHECKOUT = 10000
_FAILURE_STATUS = {"unknown_consumer": 404, "name_in_use": 409, "beyond_sequence": 409, QUEUE_DELETING: 409}
_REGISTER_FIELDS = {"durable", "name", "prefetch", "priority"}


def is_durable(service: QueueLeader, name: str) -> bool:
    """True when `name` is a durable consumer of the queue (as this leader has applied it)."""
    return any(info.name == name for info in service.replica.machine.durable_consumers())


def _position_json(position: DurablePosition, name: str) -> dict[str, Any]:
    return {"consumer": name, "settled": position.settled, "end": position.end, "bytes": position.taken_bytes}


async def _submit(request: web.Request, service: QueueLeader, command: Command) -> DurablePosition:
    reply = await request.app[NODE].submit(service, command)
    if isinstance(reply, Failure):
        status = _FAILURE_STATUS.get(reply.code, 400)
        raise ApiError(status, reply.code, reply.reason)
    assert isinstance(reply, DurablePosition)
    return reply


async def register_durable(request: web.Request, service: QueueLeader, body: dict[str, Any]) -> web.Response:
    """POST /api/queues/{q}/consumers with {"durable": true, "name": c}: 201 with the sequence position.

    Registering an existing durable consumer again is allowed and changes nothing."""
    unknown = set(body) - _REGISTER_FIELDS
    if unknown:
        raise bad(f"unknown fields {sorted(unknown)} for a durable consumer (it never times out)")
    name = field_str(body, "name")
    if not name:
        raise bad("a durable consumer needs a non-empty string name")
    position = await _submit(request, service, DurableCheckout(service.now_ms(), name, 0))
    return web.json_response(_position_json(position, name), status=201)


@on_queue_leader
async def checkout(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{c}/checkout {"max": n, "since": t, "max_bytes": b}: number up to
    n more ready messages, only those enqueued at or after `since` (epoch ms or ISO-8601) when given,
    while their bodies add up to at most `max_bytes` (the first one always).

    Registers the consumer if it is unknown (then its sequence starts again at 0)."""
    name = request.match_info["tag"]
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
    command = DurableCheckout(service.now_ms(), name, count, field_since(body), max_bytes)
    position = await _submit(request, service, command)
    return web.json_response(_position_json(position, name))


@on_queue_leader
async def settle_below(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """POST /api/queues/{q}/consumers/{c}/settle {"below": n}: settle every delivery numbered below n."""
    name = request.match_info["tag"]
    body = await json_object(request)
    below = field_int(body, "below", None)
    if below is None:
        raise bad("below is required")
    position = await _submit(request, service, DurableSettle(service.now_ms(), name, below))
    return web.json_response(_position_json(position, name))


@on_queue_leader
async def read_log(request: web.Request, service: QueueLeader) -> web.StreamResponse:
    """GET /api/queues/{q}/consumers/{c}/log?from=&to=: the deliveries numbered from..to-1, unchanged.

    Non-destructive. A range this leader has not applied yet waits for one round through the log;
    anything settled, returned or missing is a 409, never a silent gap."""
    name = request.match_info["tag"]
    start, end = query_int(request, "from"), query_int(request, "to")
    if end - start > MAX_POLL:
        raise bad(f"at most {MAX_POLL} deliveries per read")
    if not any(info.name == name and end <= info.end for info in service.replica.machine.durable_consumers()):
        await request.app[NODE].submit(service, Tick(service.now_ms()))  # apply all that is committed
    if not is_durable(service, name):
        raise ApiError(404, "not_found", f"no durable consumer '{name}' on queue '{service.name}'")
    try:
        rows = service.replica.machine.durable_log(name, start, end)
    except (DurableLogGap, KeyError) as exc:
        raise ApiError(409, "log_gap", str(exc)) from exc
    found = []
    bodies = service.replica.bodies.get_many(delivery.id for _, delivery in rows)
    for (seq, delivery), stored in zip(rows, bodies, strict=True):
        if stored is None:
            raise ApiError(409, "log_gap", f"the body of delivery {seq} (message {delivery.id}) is gone")
        found.append((delivery, stored))
    return deliveries_response(request, found, [seq for seq, _ in rows])


async def cancel_durable(request: web.Request, service: QueueLeader, name: str) -> web.Response:
    """DELETE /api/queues/{q}/consumers/{c} for a durable consumer: its deliveries return to the queue."""
    reply = await request.app[NODE].submit(service, Cancel(service.now_ms(), name))
    if isinstance(reply, Failure):
        raise ApiError(404, reply.code, reply.reason)
    return web.Response(status=204)
