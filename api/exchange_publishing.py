"""A publish to an exchange: routed on the node the client called, from the metadata it applied
(`RoutingTable`), then published to each target queue the way a publish to that queue is
(`publish_routed`: here when this node leads it, else over the peer transport), all at once.

A copy routed through a named exchange keeps the exchange and its routing key in its headers
(`routed_headers`: `x-amqp-exchange`, `x-amqp-routing-key`), as an AMQP message keeps them, for its
consumers and for dead-lettering by its own routing key.

The answer is RabbitMQ's confirm: 201 once every target queue committed its copy. Each copy carries the
publisher's `publisher` and `seq`, so a retry after a partial failure enqueues only the copies that were
missing (each queue deduplicates them). A copy goes to a queue's leader for the node itself
(`NODE_PRINCIPAL`): the caller's right to write to the exchange was checked here, and RabbitMQ asks no
more of a publisher than that.

Messages that reach no queue are dropped, or with `mandatory` reported: listed in `"unroutable"` and
answered 200 instead of 201 (the others were published).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from aiohttp import web

from api.access import Access, Principal
from api.app_keys import METADATA
from api.auth import require
from api.error_answers import error_answer
from api.errors import ApiError
from api.publish_job import PublishJob
from api.publishing import Answer, publish_routed
from api.routing_revision import applied_revision
from api.validation import QUEUE_NAME, is_utf8
from cluster.metadata.metadata_view import MetadataView
from cluster.replication.stored_message import StoredMessage, routed_headers
from cluster.security.peer_auth import NODE_PRINCIPAL
from metadata_state.records import ExchangeRecord
from metadata_state.vhost_names import DEFAULT_VHOST, name_in_vhost

DEFAULT_EXCHANGE = ExchangeRecord(DEFAULT_VHOST, "", "direct")
"""The default exchange: it routes a message to the queue its routing key names."""


async def publish_to_exchange(
    app: web.Application,
    vhost: str,
    exchange: str,
    routing_key: str,
    job: PublishJob,
    mandatory: bool,
    hops: int = 0,
) -> Answer:
    """Route each message of `job` from `exchange` (known here, not internal, the caller's right to
    write to it checked) by `routing_key` and its headers, and publish its copies: the status and body of
    the answer. Every target's own answer is kept under `"routed"`; a target that failed makes the
    answer its error (the first in name order), with the copies that were confirmed beside it."""
    metadata = app[METADATA]
    table = metadata.routing_table
    # the default exchange names its queue: one this node has not applied yet is asked for all the same
    known = _queue_name if exchange == "" else metadata.queues.__contains__
    positions: dict[str, list[int]] = {}
    unroutable: list[int] = []
    for position, (message, _expiration) in enumerate(job.messages):
        targets = table.route(vhost, exchange, routing_key, message.headers, message.body, known)
        if not targets:
            unroutable.append(position)
        for queue in targets:
            positions.setdefault(queue, []).append(position)
    queues = sorted(positions)
    if exchange:
        job = _routed_through(job, exchange, routing_key)
    answers = await asyncio.gather(
        *(_publish_copies(app, queue, _part(job, positions[queue]), hops) for queue in queues)
    )
    listed = metadata.queues.__contains__
    return exchange_answer(
        dict(zip(queues, answers, strict=True)), positions, len(job.messages), unroutable, mandatory, listed
    )


def exchange_answer(
    answers: dict[str, Answer],
    positions: dict[str, list[int]],
    count: int,
    unroutable: list[int],
    mandatory: bool,
    listed: Callable[[str], bool],
) -> Answer:
    """The answer to a publish of `count` messages through an exchange, from each target queue's answer
    to the copies of the messages at its `positions`:
    - a copy answered 404 for a queue this node's metadata no longer lists (`listed`) is gone, as
      RabbitMQ drops a copy for a deleted queue; its messages count as unroutable unless another queue
      took them; a 404 for a queue still listed is a 503 (its leader may not have applied it yet);
    - a queue that answered a retried seq with fewer ids than this attempt routed it messages took the
      missing ones in no attempt: 409 `routing_changed` (routed otherwise than the first time);
    - with any failure, the answer is a retryable one (503) if there is one, else the first by name,
      naming its `queue`, with the copies confirmed (`routed`) and the other failures (`failed`);
    - else 201 (200 with `mandatory` when some messages reached no queue), `routed` per queue, with
      `positions` for a queue that took only some messages, and `unroutable`."""
    routed: dict[str, dict[str, Any]] = {}
    failed: dict[str, Answer] = {}
    taken: set[int] = set()
    for queue, (status, body) in answers.items():
        if status == 404 and not listed(queue):
            continue
        taken.update(positions[queue])
        shown = name_in_vhost(queue)  # as the caller names it, in the vhost it published to
        if status == 404:
            failed[shown] = (
                503,
                {**body, "error": "no_leader", "reason": f"queue '{shown}': {body['reason']}"},
            )
        elif status >= 300:
            failed[shown] = (status, body)
        elif len(body.get("ids", ())) != len(positions[queue]):
            reason = (
                f"queue '{shown}' answered this publisher's seq with {len(body.get('ids', ()))} ids for the "
                f"{len(positions[queue])} messages routed to it now: the seq was routed otherwise before "
                "(or long ago), and some of them are not in it"
            )
            failed[shown] = (409, {"error": "routing_changed", "reason": reason})
        else:
            routed[shown] = (
                body if len(positions[queue]) == count else {**body, "positions": positions[queue]}
            )
    if failed:
        queue = min(failed, key=lambda name: (failed[name][0] != 503, name))
        status, error = failed[queue]
        others = {name: body for name, (_, body) in failed.items() if name != queue}
        return status, {**error, "queue": queue, "routed": routed, "failed": others}
    unroutable = sorted({*unroutable, *(p for qp in positions.values() for p in qp if p not in taken)})
    answer: dict[str, Any] = {"routed": routed}
    if unroutable:
        answer["unroutable"] = unroutable
    return (200 if mandatory and unroutable else 201), answer


def _queue_name(name: str) -> bool:
    return QUEUE_NAME.fullmatch(name_in_vhost(name)) is not None


async def _publish_copies(app: web.Application, queue: str, job: PublishJob, hops: int) -> Answer:
    try:
        return await publish_routed(app, queue, job, NODE_PRINCIPAL, hops)
    except Exception as exc:  # answered per queue: one target's failure is not the others'
        return error_answer(app, exc, f"a publish routed to queue '{queue}'")


def _routed_through(job: PublishJob, exchange: str, routing_key: str) -> PublishJob:
    """`job` with each message's headers naming the exchange and routing key it was routed by."""
    messages = [
        (StoredMessage(m.body, routed_headers(m.headers, exchange, routing_key), m.encoding), expiration)
        for m, expiration in job.messages
    ]
    return replace(job, messages=messages)


def _part(job: PublishJob, positions: Sequence[int]) -> PublishJob:
    """The messages of `job` at `positions`, with their delays and priorities."""
    if len(positions) == len(job.messages):
        return job
    return replace(
        job,
        messages=[job.messages[p] for p in positions],
        delays=None if job.delays is None else _picked(job.delays, positions),
        priorities=None if job.priorities is None else _picked(job.priorities, positions),
    )


def _picked(values: Sequence[Any], positions: Sequence[int]) -> list[Any]:
    return [values[p] for p in positions]


async def exchange_known(metadata: MetadataView, vhost: str, name: str, revision: int | None) -> bool:
    """Whether this node knows the exchange a publish names ("" the default one), once it applied the
    routing `revision` the publisher saw (503 `metadata_behind` after a while without it); 403 for an
    internal exchange, which takes publishes only from other exchanges."""
    await applied_revision(metadata, revision)
    record = DEFAULT_EXCHANGE if name == "" else metadata.exchange(vhost, name)
    if record is not None and record.internal:
        raise ApiError(403, "forbidden", f"exchange '{name}' is internal: it takes publishes from exchanges")
    return record is not None


def unknown_exchange(vhost: str, name: str) -> ApiError:
    """The answer to a publish through an exchange nobody declared."""
    return ApiError(404, "not_found", f"no exchange '{name}' in vhost '{vhost}'")


async def publishes_through(
    metadata: MetadataView,
    caller: Principal,
    vhost: str,
    exchange: str,
    routing_key: str,
    revision: int | None,
) -> bool:
    """What every edge asks before a publish through an exchange: 403 unless `caller` may publish through
    `exchange` of `vhost` by `routing_key` (first: a refused caller learns nothing of what exists), then
    whether this node knows the exchange (`exchange_known`)."""
    require_publisher(caller, vhost, exchange, routing_key)
    return await exchange_known(metadata, vhost, exchange, revision)


def require_publisher(caller: Principal, vhost: str, exchange: str, routing_key: str, why: str = "") -> None:
    """403 unless `caller` may write to `exchange` of `vhost`, or through the default exchange to the
    queue the routing key names (as a publish to that queue asks); the refusal says `why` it is needed."""
    if exchange:
        require(caller, Access.WRITE, exchange, why, resource="exchange", vhost=vhost)
    else:
        require(caller, Access.WRITE, routing_key, why, vhost=vhost)


def route_fields(body: dict[Any, Any]) -> tuple[str, bool]:
    """Take `routing_key` (text, "" when left out) and `mandatory` (a boolean, false when left out) out
    of a publish body to an exchange, leaving a publish body."""
    routing_key = body.pop("routing_key", None)
    mandatory = body.pop("mandatory", None)
    if routing_key is None:
        routing_key = ""
    if not isinstance(routing_key, str) or not is_utf8(routing_key) or len(routing_key.encode()) > 255:
        raise ApiError(400, "bad_request", "routing_key must be text of at most 255 bytes")
    if mandatory is not None and not isinstance(mandatory, bool):
        raise ApiError(400, "bad_request", "mandatory must be a boolean")
    return routing_key, bool(mandatory)
