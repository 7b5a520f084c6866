"""HTTP endpoints for exchanges, in the shapes of RabbitMQ's management API (`/api/exchanges/{vhost}/{name}`,
the vhost `/` written `%2F`; the default exchange, "", named `amq.default` in a path): list, declare and
delete (on the metadata leader), and publish through one (`api.exchange_publishing`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from aiohttp import web
from msgspec import Meta

from api.access import Access
from api.app_keys import CONFIG, METADATA, METADATA_DOOR, STATUS, WALL_MS
from api.auth import principal, require
from api.endpoints import parameter, route
from api.error_answers import passed_on_answer
from api.errors import ApiError
from api.exchange_publishing import (
    DEFAULT_EXCHANGE,
    publish_to_exchange,
    publishes_through,
    route_fields,
    unknown_exchange,
)
from api.forwarding import forward, hops_of, on_meta_leader
from api.json_codec import json_answer
from api.limits import check_routing_room
from api.publish_job import PublishBody, publish_of
from api.request_bodies import RequestBody, read_body_as
from api.routing_names import exchange_of, proposed, require_read_everywhere, vhost_of
from api.routing_revision import await_revision, revision_of, with_revision
from api.validation import bad, publish_object, query_flag
from cluster.routing.exchange_checks import (
    RoutingError,
    checked_exchange_arguments,
    checked_exchange_type,
    is_reserved,
)
from cluster.routing.routing_table import ALTERNATE_EXCHANGE
from metadata_state.records import BUILTIN_EXCHANGES, ExchangeRecord
from metadata_state.replies import Conflict, Created, Exists, InUse, Invalid, NotFound

EXCHANGES = "/api/exchanges"
EXCHANGE = "/api/exchanges/{vhost}/{exchange}"


class ExchangeDeclaration(RequestBody):
    """An exchange's declaration, as RabbitMQ's management API takes it."""

    type: Annotated[str, Meta(description="direct, fanout, topic or headers")]
    durable: Annotated[bool, Meta(description="kept for clients: every exchange is replicated")] = True
    auto_delete: Annotated[bool, Meta(description="deleted once its last binding as a source is")] = False
    internal: Annotated[bool, Meta(description="takes publishes only from other exchanges")] = False
    arguments: Annotated[
        dict[str, Any], Meta(description="`alternate-exchange`: where what it cannot route goes")
    ] = {}


class ExchangePublish(PublishBody):
    """A publish through an exchange: a publish's messages, the routing key they carry, and whether
    messages that reach no queue are reported (`mandatory`)."""

    routing_key: Annotated[str, Meta(max_length=255)] = ""
    mandatory: bool = False


def exchange_json(record: ExchangeRecord) -> dict[str, Any]:
    """An exchange as RabbitMQ's management API shows it."""
    return {
        "name": record.name,
        "vhost": record.vhost,
        "type": record.type,
        "durable": record.durable,
        "auto_delete": record.auto_delete,
        "internal": record.internal,
        "arguments": record.arguments,
    }


def _visible(request: web.Request, vhosts: list[str]) -> list[dict[str, Any]]:
    caller, metadata = principal(request), request.app[METADATA]
    return [
        exchange_json(x)
        for vhost in vhosts
        for x in [replace(DEFAULT_EXCHANGE, vhost=vhost), *metadata.exchanges_in(vhost)]
        if caller.lists_in(vhost, x.name or "amq.default")
    ]


@route(
    "GET",
    EXCHANGES,
    access=Access.AUTHENTICATED,
    summary="list exchanges",
    responses={"200": "the exchanges the caller holds any permission on (all, for administrators)"},
)
async def list_exchanges(request: web.Request) -> web.StreamResponse:
    """GET /api/exchanges: the default exchange, the built-in `amq.*` ones and every declared one."""
    await await_revision(request)
    return json_answer(_visible(request, [v.name for v in request.app[METADATA].vhosts]))


@route(
    "GET",
    EXCHANGES + "/{vhost}",
    access=Access.AUTHENTICATED,
    summary="list a vhost's exchanges",
    responses={"200": "its exchanges", "404": "no such vhost"},
)
async def list_vhost_exchanges(request: web.Request) -> web.StreamResponse:
    """GET /api/exchanges/{vhost}."""
    await await_revision(request)
    return json_answer(_visible(request, [vhost_of(request)]))


@route(
    "GET",
    EXCHANGE,
    access=Access.AUTHENTICATED,
    summary="one exchange",
    responses={"200": "the exchange", "404": "no such exchange"},
)
async def get_exchange(request: web.Request) -> web.StreamResponse:
    """GET /api/exchanges/{vhost}/{exchange}."""
    await await_revision(request)
    vhost, name = vhost_of(request), exchange_of(request)
    require(
        principal(request),
        Access.ANY_QUEUE_PERMISSION,
        name or "amq.default",
        resource="exchange",
        vhost=vhost,
    )
    record = (
        replace(DEFAULT_EXCHANGE, vhost=vhost) if name == "" else request.app[METADATA].exchange(vhost, name)
    )
    if record is None:
        raise ApiError(404, "not_found", f"no exchange '{name}' in vhost '{vhost}'")
    return json_answer(exchange_json(record))


@route(
    "PUT",
    EXCHANGE,
    access=Access.AUTHENTICATED,
    summary="declare an exchange",
    responses={
        "201": "created",
        "204": "exists with this definition",
        "403": "a reserved name (amq.*) or no configure permission",
        "409": "exists with another definition (precondition_failed)",
    },
    body=ExchangeDeclaration,
    about=(
        'RabbitMQ\'s exchanges: `{"type": "direct"|"fanout"|"topic"|"headers", "durable", "auto_delete", '
        '"internal", "arguments": {"alternate-exchange": name}}`; needs configure permission on its name; '
        "the answer names the routing revision after it (`X-Quorumq-Routing-Revision`), which a publish may "
        "carry to be routed only once the node it reaches applied it (docs/use/routing.md)"
    ),
)
@on_meta_leader
async def declare_exchange(request: web.Request) -> web.StreamResponse:
    """PUT /api/exchanges/{vhost}/{exchange}: 201 created, 204 the same exists, 409 another exists."""
    vhost, name = vhost_of(request), exchange_of(request, default=False)
    require(principal(request), Access.CONFIGURE, name, resource="exchange", vhost=vhost)
    given = await read_body_as(request, ExchangeDeclaration)
    try:
        kind = checked_exchange_type(given.type)
        arguments = checked_exchange_arguments(given.arguments)
    except RoutingError as exc:
        raise bad(str(exc)) from exc
    alternate = arguments.get(ALTERNATE_EXCHANGE)
    if isinstance(alternate, str):  # what it cannot route goes there: RabbitMQ's rights for that
        caller = principal(request)
        require(caller, Access.READ, name, " to give it an alternate exchange", "exchange", vhost)
        require(caller, Access.WRITE, alternate, " to make it an alternate exchange", "exchange", vhost)
    if is_reserved(name) and BUILTIN_EXCHANGES.get(name) != kind:
        raise ApiError(403, "forbidden", f"exchange names starting with 'amq.' are reserved ('{name}')")
    require_read_everywhere(request)
    if request.app[METADATA].exchange(vhost, name) is None:
        check_routing_room(request.app, exchanges=1)
    reply = await proposed(
        request.app[METADATA_DOOR].declare_exchange(
            vhost, name, kind, given.durable, given.auto_delete, given.internal, arguments
        )
    )
    metadata = request.app[METADATA]
    if isinstance(reply, Created):
        return with_revision(json_answer({"exchange": name, "vhost": vhost}, status=201), metadata)
    if isinstance(reply, Exists):
        return with_revision(web.Response(status=204), metadata)
    if isinstance(reply, Conflict):
        raise ApiError(
            409,
            "precondition_failed",
            f"exchange '{name}' in vhost '{vhost}' exists with another definition",
            existing=reply.arguments,
        )
    raise _refused(reply)


@route(
    "DELETE",
    EXCHANGE,
    access=Access.AUTHENTICATED,
    summary="delete an exchange and its bindings",
    responses={"204": "deleted", "404": "no such exchange", "409": "if-unused and it has bindings"},
    query=(parameter("if-unused", {"type": "boolean"}),),
)
@on_meta_leader
async def delete_exchange(request: web.Request) -> web.StreamResponse:
    """DELETE /api/exchanges/{vhost}/{exchange}[?if-unused=true]: 204; with every binding from or to it."""
    vhost, name = vhost_of(request), exchange_of(request, default=False)
    require(principal(request), Access.CONFIGURE, name, resource="exchange", vhost=vhost)
    if name in BUILTIN_EXCHANGES:
        raise ApiError(403, "forbidden", f"the built-in exchange '{name}' cannot be deleted")
    require_read_everywhere(request)
    if_unused = query_flag(request, "if-unused") or query_flag(request, "if_unused")
    reply = await proposed(request.app[METADATA_DOOR].delete_exchange(vhost, name, if_unused))
    if isinstance(reply, InUse):
        raise ApiError(409, "precondition_failed", reply.reason)
    if isinstance(reply, (NotFound, Invalid)):
        raise _refused(reply)
    return with_revision(web.Response(status=204), request.app[METADATA])


def _refused(reply: object) -> ApiError:
    if isinstance(reply, NotFound):
        return ApiError(404, "not_found", reply.reason)
    if isinstance(reply, Invalid):
        return bad(reply.reason)
    return ApiError(500, "internal_error", f"unexpected metadata reply {reply!r}")


@route(
    "POST",
    EXCHANGE + "/publish",
    access=Access.AUTHENTICATED,
    summary="publish through an exchange, with confirms",
    responses={
        "201": "routed: every target queue committed its copy",
        "200": "mandatory, and some messages reached no queue (listed in unroutable)",
        "403": "no write permission on the exchange, or an internal exchange",
        "404": "no such exchange",
    },
    body=ExchangePublish,
    about=(
        "a publish's body (`messages`, `publisher`, `seq`, `wait`) with `routing_key` and `mandatory`: "
        "each message is routed by the routing key and its headers, on the node called, and published "
        'to every queue it reaches; 201 `{"routed": {queue: that queue\'s publish answer, with '
        "`positions` when it took only some of the messages}}` once every copy is committed (each "
        "queue deduplicates the copies of a retried `publisher`+`seq`); messages that reached no queue "
        'are listed in `"unroutable"` (200 with `mandatory`, else dropped as RabbitMQ drops them); a '
        "target that refused answers its error with the queue named and the copies confirmed beside it; "
        "needs write permission on the exchange (on the queue, through the default exchange); with "
        "`X-Quorumq-Routing-Revision`, routed once this node applied that revision"
    ),
)
async def publish(request: web.Request) -> web.StreamResponse:
    """POST /api/exchanges/{vhost}/{exchange}/publish."""
    vhost, name = vhost_of(request), exchange_of(request)
    body = await publish_object(request)
    routing_key, mandatory = route_fields(body)
    status, metadata, caller = request.app[STATUS], request.app[METADATA], principal(request)
    if not await publishes_through(metadata, caller, vhost, name, routing_key, revision_of(request)):
        if status.meta_leader() not in (None, status.name):  # it may know what this node has not applied
            return await forward(request, status.meta_leader(), status.meta_leader)
        raise unknown_exchange(vhost, name)
    job = publish_of(body, request.app[CONFIG], request.app[WALL_MS]())
    answer = await publish_to_exchange(
        request.app, vhost, name, routing_key, job, mandatory, hops_of(request)
    )
    return passed_on_answer(*answer)
