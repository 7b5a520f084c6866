"""Handlers for queues and their messages: declare, stats, delete, purge, publish, get, settle."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import Annotated, Any, ClassVar, Literal

from aiohttp import web
from msgspec import Meta

from api.access import Access
from api.app_keys import CONFIG, METADATA, METRICS, QUEUES, STATUS
from api.auth import names_a_vhost, principal, require
from api.deliveries import (
    DEFAULT_MAX_BYTES,
    JSON,
    MAX_BYTES_ABOUT,
    MaxBytes,
    deliveries_response,
    json_deliveries,
    max_bytes_query,
    msgpack_delivery,
    wants_msgpack,
)
from api.endpoints import QUEUE, parameter, queue_path_words, route
from api.error_answers import passed_on_answer
from api.errors import ApiError
from api.exchange_publishing import require_publisher
from api.forwarding import (
    client_node,
    forward,
    get_from_node,
    hops_of,
    on_meta_leader,
    on_queue_leader,
    queue_route,
)
from api.paging import PAGING_QUERY, listed
from api.publish_job import PublishBody, read_publish
from api.publishing import PUBLISH_ACCESS, forwards_over_peers, publish_on_route
from api.request_bodies import Moment, RequestBody, read_body_as
from api.routing_names import existing_vhost
from api.routing_revision import with_revision
from api.schemas import DELIVERIES, MAX_BYTES, ONE_DELIVERY
from api.settle_options import SETTLES, Ack, Nack, Touch, settle_options, touch_answer
from api.validation import (
    MAX_POLL,
    MSGPACK,
    bad,
    check_queue_name,
    moment_ms,
    query_flag,
    query_int,
    queue_name,
)
from cluster.queues.policies import applied_names, policy_in_force
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_limits import INT64_MAX
from cluster.queues.queue_results import MessageRow
from cluster.routing.exchange_checks import RoutingError, checked_exchange_name
from metadata_state.vhost_names import DEFAULT_VHOST, qualified, split, vhost_of

MAX_GET = 1000
RABBITMQ_QUEUE_FIELDS = {
    "type": "quorum",
    "durable": True,
    "auto_delete": False,
    "exclusive": False,
}
"""The fields of RabbitMQ's management API every queue here has the same value of."""
VHOST_QUEUES = "/api/queues/%2F"  # RabbitMQ's path for the default vhost's queues
QUEUES_QUERY = (
    *PAGING_QUERY,
    parameter("local", {"type": "boolean"}),
    parameter("led", {"type": "boolean"}),
)
LIST_QUEUES = (
    "every queue with statistics, as its leader counts them (local=true: as this node's replicas do;"
    " led=true: only the queues this node leads); with page, RabbitMQ's page object; name (use_regex),"
    " sort, sort_reverse, columns as RabbitMQ's"
)


class QueueDeclaration(RequestBody):
    """A declare: the queue's arguments, by their RabbitMQ names (`x-max-length`, ...)."""

    optional: ClassVar[bool] = True
    arguments: dict[str, Any] = {}


class ArgumentChanges(RequestBody):
    """A change of a queue's arguments at runtime, each set to its new value (null removes it)."""

    arguments: Annotated[dict[str, Any], Meta(min_length=1)]


class GetRequest(RequestBody, forbid_unknown_fields=False):
    """A one-shot get (other fields are ignored)."""

    optional: ClassVar[bool] = True
    count: Annotated[Annotated[int, Meta(ge=1, le=MAX_GET)] | None, Meta(description="default 1")] = None
    ack: Annotated[
        Literal["manual", "auto"],
        Meta(description="manual: held until acked; auto: settled as they are answered"),
    ] = "manual"
    since: Annotated[
        Moment | None, Meta(description="only messages enqueued at or after this time: epoch ms or ISO-8601")
    ] = None
    max_bytes: Annotated[MaxBytes | None, Meta(description=MAX_BYTES_ABOUT)] = None


def queue_json(request: web.Request, name: str, queue: QueueDoor | None) -> dict[str, Any]:
    """A queue's definition, its policy and arguments in force and, from a local replica, its statistics
    (a queue not hosted here shows what the metadata makes of it)."""
    queues, status = request.app[QUEUES], request.app[STATUS]
    info = queues.info(name)
    if queue is not None:
        arguments, effective = queue.definition(), queue.effective_definition()
        policy, operator_policy = applied_names(queue.policy)
    else:
        arguments = info.arguments
        policy, operator_policy, in_force = policy_in_force(arguments, request.app[METADATA].policy_set, name)
        effective = in_force.to_arguments()
    leader = queues.leader_of(name)
    online = [m for m in info.members if status.is_up(m)]
    vhost, name_in_it = split(name)
    result: dict[str, Any] = {
        "name": name_in_it,
        "vhost": vhost,
        "arguments": arguments,
        "policy": policy or None,
        "operator_policy": operator_policy or None,
        "effective_arguments": effective,
        "leader": leader,
        "members": info.members,
        "online": online,
        **RABBITMQ_QUEUE_FIELDS,
        "node": leader,
        "state": "running" if leader is not None and 2 * len(online) > len(info.members) else "minority",
    }
    if queue is not None:
        result.update(asdict(queue.stats()))
        result["message_stats"] = request.app[METRICS].rates.message_stats(name)
    return result


@route(
    "POST",
    QUEUE + "/messages",
    access=PUBLISH_ACCESS,
    summary="publish with confirms",
    responses={
        "201": "ids",
        "409": "seq_too_old (seq below the dedup window, status unknown) or queue_deleting",
        "413": "too large",
        "422": "too many headers",
        "507": "queue full (once its wait is up)",
    },
    body=PublishBody,
    about=(
        'publish (each message `{"body", "encoding", "headers", "expiration", "delay" or '
        '"not_before", "priority", "message_id", "group"}`: a delayed message waits in the queue, counted in '
        "`messages_delayed`, then takes its FIFO place by id; `priority` 0-255, served "
        "strictly highest first, above the queue's top (31, or `x-max-priority`) taken as the "
        'top); 201 `{"ids"}` after majority commit; same `publisher`+`seq` again answers the '
        'same ids (`"duplicate": true`; `"ids": []` once forgotten, past 1024 later seqs); a '
        "message whose `message_id` a queue with `x-dedupe-window` took within the window is not "
        'enqueued again: its position is listed in `"duplicates"` and its id is the first one\'s '
        '(`"duplicate": true` when every message was one); a queue with `x-message-groups` hands '
        "out one message of a `group` (or header `x-group-id`; 1-255 bytes of UTF-8, else 400) at "
        "a time, in order (docs/use/message-groups.md); "
        "409 `seq_too_old` (nothing enqueued) for a seq below that window not known to have "
        "been enqueued; 409 `queue_deleting` while a guarded delete removes the queue; 507 "
        "when a `reject-publish` queue is full, once its `wait` (ms, 0-30000, 0 by default) for "
        "room is up: the queue's leader tries it again as gets, acks, purges, expiries or a new "
        "limit make room, with its `publisher`+`seq` (a queue holding its `x-discard-mark` of ready "
        "messages answers 201 with every id but drops those below its "
        "`x-discard-below-priority`, counted in its `dropped.discarded`); 413 over the size "
        "limits (the body's `max_request_bytes`, and the replicated operation's 64 MiB less 64 KiB: "
        'docs/operate/security.md "Limits"); 503 `resource_alarm` while a node holding a '
        "replica of the queue is in a disk or memory alarm (docs/operate/operations.md "
        '"Resource alarms"); 503 `overloaded` (with `Retry-After`, nothing enqueued) while the '
        "queue's leader holds as many proposals not yet applied as it takes "
        '(docs/operate/operations.md "Overload")'
    ),
)
async def publish(request: web.Request) -> web.StreamResponse:
    """POST /api/queues/{q}/messages: 201 with ids once a majority has the messages.

    A full reject-publish queue is 507 (once the publish's `wait` for room is up); a seq too old for the
    publisher's dedup window to tell whether it was enqueued is 409 `seq_too_old` (nothing enqueued).
    The body is JSON, or msgpack
    (`Content-Type: application/msgpack`, bodies as bin); the answer is JSON. Served on the queue's
    leader: forwarded there over the peer transport when it can be (`api.publishing`), else over
    HTTP."""
    name = queue_name(request)
    to_leader = await queue_route(request.app[QUEUES], request.app[STATUS], name)
    if to_leader is not None and not forwards_over_peers(request, to_leader):
        return await forward(request, to_leader.target, to_leader.leader_now)
    job = await read_publish(request)
    caller, hops = principal(request).name, hops_of(request)
    status, body = await publish_on_route(request.app, name, job, caller, hops, to_leader)
    return passed_on_answer(status, body)


@route(
    "PUT",
    QUEUE,
    access=Access.CONFIGURE,
    summary="declare a queue",
    responses={"201": "created", "204": "exists with these arguments", "409": "exists with other arguments"},
    body=QueueDeclaration,
    about=(
        'declare (`{"arguments": {...}}`, RabbitMQ\'s names, and the backlog controls: '
        "`x-max-unacked` (no hand-out while that many are unacked), `x-discard-mark` with "
        "`x-discard-below-priority` (at that many ready, a publish below that priority is "
        "dropped), `x-dequeue-interval-ms` (one hand-out per interval), `x-dequeue-window` "
        '(`"HH:MM-HH:MM"` UTC: hand-outs only then); docs/internals/queue_state.md, '
        '"Backlog controls"; and `x-dedupe-window` (ms) with `x-dedupe-max` (ids, 100000 by default): '
        "a message whose `message_id` the queue took within the window is a duplicate, "
        "docs/use/deduplication.md; dead letters go to `x-dead-letter-queue` or through "
        "`x-dead-letter-exchange` by `x-dead-letter-routing-key` or their own, not both, "
        "docs/use/routing.md; `x-message-groups` (true: one message of a group out at a time, "
        "in order, fixed at declaration, docs/use/message-groups.md)): 201 created, 204 same, "
        "409 different, 400 bad argument"
    ),
)
@on_meta_leader
async def declare_queue(request: web.Request) -> web.StreamResponse:
    """PUT /api/queues/{q}: 201 created, 204 already there with the same arguments, 409 otherwise."""
    name = queue_name(request)
    vhost, name_in_it = split(name)
    if vhost != DEFAULT_VHOST and name_in_it in queue_path_words():
        raise bad(f"'{name_in_it}' is a word of the queue paths: no queue of a vhost but '/' takes it")
    existing_vhost(request.app[METADATA], vhost)
    arguments = (await read_body_as(request, QueueDeclaration)).arguments
    _check_dead_letter_target(request, name, arguments)
    outcome = await request.app[QUEUES].declare(name, arguments, client_node(request))
    if outcome == "created":
        return web.json_response({"queue": name_in_it, "vhost": vhost}, status=201)
    return web.Response(status=204)


@route(
    "PATCH",
    QUEUE,
    access=Access.CONFIGURE,
    summary="change runtime arguments",
    responses={"200": "the queue"},
    body=ArgumentChanges,
    about=(
        "change arguments at runtime like a policy (dead-letter queue or exchange and routing "
        "key, strategy, limits, "
        "TTLs, `x-consumer-timeout`, `x-delayed-retry-type`/`-min`/`-max`: returns wait `min "
        "* 2^(n-1)` ms, capped at max, before they are ready again; the backlog controls "
        "`x-max-unacked`, `x-discard-mark`/`x-discard-below-priority`, "
        "`x-dequeue-interval-ms`, `x-dequeue-window`; the deduplication window `x-dedupe-window`, "
        "`x-dedupe-max`)"
    ),
)
@on_queue_leader
async def update_queue(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """PATCH /api/queues/{q}: change arguments at runtime, like a RabbitMQ policy (null removes one;
    `QueueDoor.update_arguments` says which may change).

    Leaving at-least-once dead-lettering drops the pending dead letters, as RabbitMQ does; the
    queue's `dropped` stats count them under `dead_letter_strategy_changed`.
    """
    changes = (await read_body_as(request, ArgumentChanges)).arguments
    _check_dead_letter_target(request, queue.name, changes)
    await queue.update_arguments(changes)
    return web.json_response(queue_json(request, queue.name, queue))


def _check_dead_letter_target(request: web.Request, queue: str, arguments: dict[str, Any]) -> None:
    """Dead-lettering publishes into the `x-dead-letter-queue` being set, or through the
    `x-dead-letter-exchange`: its name must be valid and the caller needs write permission on it as a
    publish there does (403 otherwise; through the default exchange, on the queue the
    `x-dead-letter-routing-key` names, or without one on ""). Absent, null (removed) or not a string
    (400 from the argument parser) there is nothing to check."""
    vhost, name = split(queue)
    why = f" (the dead-letter target of '{name}')"
    target = arguments.get("x-dead-letter-queue")
    if isinstance(target, str) and target:
        check_queue_name(target, request.app[CONFIG].max_queue_name_length)
        require(principal(request), Access.WRITE, qualified(vhost, target), why)
    exchange = arguments.get("x-dead-letter-exchange")
    if isinstance(exchange, str):
        if exchange:
            try:
                checked_exchange_name(exchange)
            except RoutingError as exc:
                raise bad(f"x-dead-letter-exchange: {exc}") from exc
        key = arguments.get("x-dead-letter-routing-key")
        require_publisher(principal(request), vhost, exchange, key if isinstance(key, str) else "", why)


@route(
    "GET",
    QUEUE,
    access=Access.QUEUE_OR_VHOST,
    summary="a queue's statistics, or a vhost's queues",
    responses={"200": "the queue, or the vhost's queues"},
    about=(
        "definition and stats (`messages`, `messages_ready`, `messages_ready_by_priority`, "
        "`messages_delayed`, `messages_unacknowledged`, `message_bytes`, `consumers`, "
        "`leader`, `members`, `online`, `dead_lettered`; `dedupe_ids`, `dedupe_evicted`, "
        "`dedupe_refused`: the deduplication window's ids held, let go early, duplicates refused; "
        "`groups`, `groups_blocked`: the message groups holding a message, and those with one out); "
        "needs a permission on the queue. When `{q}` names a vhost (no queue of `/` may take a "
        "vhost's name), that vhost's queues, as `GET /api/queues` lists them (RabbitMQ's "
        "`/api/queues/{vhost}`: any authenticated user, who sees the queues it holds a permission on)"
    ),
    query=QUEUES_QUERY,
)
async def get_queue_or_vhost(request: web.Request) -> web.StreamResponse:
    """GET /api/queues/{q}: the queue, or the vhost's queues when `{q}` names a vhost."""
    if names_a_vhost(request):
        return web.json_response(listed(request, await visible_queues(request, request.match_info["q"])))
    return await _get_queue(request)


@on_queue_leader
async def _get_queue(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    return web.json_response(queue_json(request, queue.name, queue))


@route(
    "GET",
    VHOST_QUEUES,
    access=Access.AUTHENTICATED,
    summary=LIST_QUEUES + " (RabbitMQ's path: %2F, the default vhost's)",
    responses={"200": "queues"},
    query=QUEUES_QUERY,
)
async def list_default_vhost_queues(request: web.Request) -> web.StreamResponse:
    """GET /api/queues/%2F: the default vhost's queues, as `GET /api/queues` lists them."""
    return web.json_response(listed(request, await visible_queues(request, DEFAULT_VHOST)))


@route(
    "GET",
    "/api/queues",
    access=Access.AUTHENTICATED,
    summary=LIST_QUEUES,
    responses={"200": "queues, or a page of them"},
    query=QUEUES_QUERY,
)
async def list_queues(request: web.Request) -> web.StreamResponse:
    """GET /api/queues: the queues of every vhost the caller may see, filtered, sorted and paged as
    RabbitMQ's management API does (`api.paging`)."""
    return web.json_response(listed(request, await visible_queues(request)))


async def visible_queues(request: web.Request, vhost: str | None = None) -> list[dict[str, Any]]:
    """Every queue (of `vhost`, when it names one) the caller may see (`Principal.lists`), as its leader
    answers for it: led here, or in one call to each other leader for all it leads (`?led=true`), else
    from a replica here or the metadata. With `?local=true` a replica here answers for its queue, leading
    or not (this node's own view); with `?led=true` only the queues led here are listed."""
    caller, queues = principal(request), request.app[QUEUES]
    names = [
        name for name in queues.names() if caller.lists(name) and (vhost is None or vhost_of(name) == vhost)
    ]
    if query_flag(request, "led"):
        return [
            queue_json(request, n, door) for n in names if (door := queues.hosted_door(n)) and door.is_leader
        ]
    own_view = query_flag(request, "local")
    answered: dict[str, dict[str, Any]] = {}
    elsewhere: set[str] = set()
    for name in names:
        door = queues.hosted_door(name)
        if door is not None and (own_view or door.is_leader):
            answered[name] = queue_json(request, name, door)
        elif (leader := queues.leader_of(name)) is not None:
            elsewhere.add(leader)
    urls = [url for node in sorted(elsewhere) if (url := request.app[STATUS].node_http(node))]
    led_elsewhere = await asyncio.gather(
        *(get_from_node(request, f"{url}/api/queues?led=true") for url in urls)
    )
    for rows in led_elsewhere:
        for row in rows if isinstance(rows, list) else []:
            answered.setdefault(qualified(row.get("vhost", DEFAULT_VHOST), row["name"]), row)
    return [answered.get(name) or queue_json(request, name, queues.hosted_door(name)) for name in names]


@route(
    "DELETE",
    QUEUE,
    access=Access.CONFIGURE,
    summary="delete a queue",
    responses={"204": "deleted", "409": "not empty or not unused"},
    query=(parameter("if_empty", {"type": "boolean"}), parameter("if_unused", {"type": "boolean"})),
    about=(
        "delete: 204; the guards are checked by the queue's leader in the queue's log (409 "
        "when it holds messages / has consumers); once they pass, the queue refuses publishes "
        "and new consumers (409 `queue_deleting`) until it is gone"
    ),
)
async def delete_queue(request: web.Request) -> web.StreamResponse:
    """DELETE /api/queues/{q}[?if_empty=true][&if_unused=true]: a guarded delete is decided by the
    queue's leader in the queue's log (`QueueDoor.delete_if`), a plain one by the metadata leader."""
    if query_flag(request, "if_empty") or query_flag(request, "if_unused"):
        return await _delete_guarded(request)
    return await _delete(request)


@on_meta_leader
async def _delete(request: web.Request) -> web.StreamResponse:
    await request.app[QUEUES].delete(queue_name(request))
    return with_revision(web.Response(status=204), request.app[METADATA])  # its bindings went with it


@on_queue_leader
async def _delete_guarded(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    await queue.delete_if(query_flag(request, "if_empty"), query_flag(request, "if_unused"))
    return web.Response(status=204)


@route(
    "DELETE",
    QUEUE + "/contents",
    access=Access.CONFIGURE,
    summary="purge ready messages",
    responses={"200": "count purged"},
    about="purge ready and delayed messages",
)
@on_queue_leader
async def purge_queue(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """DELETE /api/queues/{q}/contents: remove every ready or delayed message."""
    return web.json_response({"purged": await queue.purge()})


@route(
    "GET",
    QUEUE + "/messages",
    access=Access.READ,
    summary="browse: the messages the queue holds (ready or checked out) by id, without consuming them",
    responses={"200": "deliveries, lowest id first"},
    content={"200": DELIVERIES},
    query=(
        parameter("from", {"type": "integer", "minimum": 0}),
        parameter("to", {"type": "integer", "minimum": 0}),
        parameter("limit", {"type": "integer", "minimum": 0, "maximum": MAX_POLL}),
        parameter("max_bytes", MAX_BYTES),
    ),
    about=(
        "browse (within `max_bytes` of bodies, as a poll): the messages a queue holds (ready "
        "or checked out) by id, consuming nothing (Spark batch reads of a dead-letter queue)"
    ),
)
@on_queue_leader
async def browse(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/messages?from=&to=&limit=&max_bytes=: the messages the queue holds, ready or
    checked out, with ids from `from` (default 0) to below `to` (default: no bound), lowest id first, at
    most `limit` (default 1000, up to 10000) within the answer's byte budget (`api.deliveries`), as
    deliveries.

    A read from the leader's applied state: nothing is delivered, counted or moved. Page with
    `from` = the last id + 1. Costs a scan of the queue per page (for reading a dead-letter queue)."""
    first = query_int(request, "from", 0)
    end = query_int(request, "to", INT64_MAX)
    limit = query_int(request, "limit", MAX_GET, maximum=MAX_POLL)
    rows = await queue.browse(first, end, limit, max_bytes_query(request))
    return deliveries_response(request, rows)


@route(
    "GET",
    QUEUE + "/messages/peek",
    access=Access.READ,
    summary="peek: the ready message at a 1-based position in delivery order, without consuming it",
    responses={"200": "one delivery", "404": "no_message: fewer ready messages than the position"},
    content={"200": ONE_DELIVERY},
    query=(parameter("position", {"type": "integer", "minimum": 1}, required=True),),
    about=(
        "peek: the ready message at 1-based position N in delivery order, as one delivery, "
        "consuming nothing; 404 `no_message` past the last (`quorumq-queues peek Q N`, "
        "`client.peek(q, n)`)"
    ),
)
@on_queue_leader
async def peek(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """GET /api/queues/{q}/messages/peek?position=N: the ready message at 1-based position N in delivery
    order (returns first), as one delivery object; 404 `no_message` past the last one, 400 for a position
    below 1. A read from the leader's applied state: nothing is delivered, counted or moved."""
    position = query_int(request, "position")
    row = await queue.peek(position)
    if row is None:
        raise ApiError(404, "no_message", f"queue '{queue.name}' has fewer than {position} ready messages")
    return _delivery_response(request, row)


def _delivery_response(request: web.Request, row: MessageRow) -> web.Response:
    """One delivery as the object a deliveries answer holds, in the form the client asked for."""
    if wants_msgpack(request):
        return web.Response(body=msgpack_delivery(row), content_type=MSGPACK)
    return web.Response(body=bytes(json_deliveries([row])[1:-1]), content_type=JSON, charset="utf-8")


@route(
    "POST",
    QUEUE + "/get",
    access=Access.READ,
    summary="basic.get",
    responses={"200": "deliveries"},
    content={"200": DELIVERIES},
    body=GetRequest,
    about=(
        'one-shot get (`"ack": "manual"/"auto"`, `"max_bytes"` of bodies as for a poll: an '
        "auto-ack get takes only what it answers) and settling or touching what it returned "
        "read only messages enqueued at or after a time (epoch ms or ISO-8601): dead-letter "
        "queues read the Logstash way"
    ),
)
@on_queue_leader
async def basic_get(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/get: up to `count` messages, auto-acked or held for a manual ack, within the
    answer's byte budget `max_bytes` (`api.deliveries`; counted before any is taken, and every message
    taken is answered, so an auto-ack get never removes one it does not answer).

    With `since` (epoch ms or ISO-8601), only messages enqueued at or after it are returned.
    """
    body = await read_body_as(request, GetRequest)
    count = 1 if body.count is None else body.count
    max_bytes = DEFAULT_MAX_BYTES if body.max_bytes is None else body.max_bytes
    rows = await queue.get(count, body.ack == "auto", moment_ms(body.since, "since"), max_bytes)
    request.app[METRICS].count_delivered(queue.name, rows)
    return deliveries_response(request, rows)


async def settle(request: web.Request, queue: QueueDoor, consumer: str | None) -> web.StreamResponse:
    """Ack (settle) or nack (return, plain with failed=false, or discard with requeue=false and an optional
    reason) delivered messages."""
    kind = request.path.rsplit("/", 1)[-1]
    options = settle_options(await read_body_as(request, SETTLES[kind]))
    settled = await queue.settle(
        options.ids, consumer, options.outcome, options.failed, options.reason, options.delay_ms
    )
    request.app[METRICS].count_settled(queue.name, kind, len(options.ids))
    if settled.warning is not None:  # e.g. a retried ack of ids already settled: nothing to undo
        return web.json_response({"ok": True, "warning": settled.warning})
    return web.json_response({"ok": True})


async def touch(request: web.Request, queue: QueueDoor, consumer: str | None) -> web.StreamResponse:
    """Extend the hold of delivered messages: each counts from now as just handed out, for the consumer
    timeout and the lease."""
    ids = tuple((await read_body_as(request, Touch)).ids)
    touched = await queue.touch(ids, consumer)
    return web.json_response(touch_answer(queue.hold_ms(consumer, over_http=True), touched.warning))


@route(
    "POST",
    QUEUE + "/touch",
    access=Access.READ,
    summary="extend the hold of got messages: each counts from now as just handed out",
    responses={"200": "touched, with hold_ms", "409": "a node reads no touches yet (upgrade_in_progress)"},
    body=Touch,
)
@on_queue_leader
async def touch_got(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/touch: extend the hold of messages obtained by a manual-ack get."""
    return await touch(request, queue, None)


@route(
    "POST",
    QUEUE + "/nack",
    access=Access.READ,
    summary="return or discard got messages",
    responses={"200": "returned"},
    body=Nack,
)
@route(
    "POST",
    QUEUE + "/ack",
    access=Access.READ,
    summary="settle got messages",
    responses={"200": "settled"},
    body=Ack,
)
@on_queue_leader
async def settle_got(request: web.Request, queue: QueueDoor) -> web.StreamResponse:
    """POST /api/queues/{q}/ack and /nack: settle messages obtained by a manual-ack get."""
    return await settle(request, queue, None)
