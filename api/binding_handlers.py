"""HTTP endpoints for bindings, in the shapes of RabbitMQ's management API:
`/api/bindings/{vhost}/e/{exchange}/q/{q}` binds an exchange to a queue and
`/e/{exchange}/e/{destination}` to an exchange; a binding is named by its properties key (the routing key,
and a digest of its arguments when it has any). Changes run on the metadata leader and answer the routing
revision after them (`api.routing_revision`)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from aiohttp import web
from msgspec import Meta

from api.access import Access
from api.app_keys import METADATA, METADATA_DOOR
from api.auth import principal, require
from api.endpoints import route
from api.errors import ApiError
from api.forwarding import on_meta_leader
from api.json_codec import json_answer
from api.limits import check_routing_room
from api.request_bodies import RequestBody, read_body_as
from api.routing_names import MAX_ROUTING_KEY_BYTES, exchange_of, proposed, require_read_everywhere, vhost_of
from api.routing_revision import await_revision, with_revision
from api.validation import bad
from cluster.routing.exchange_checks import RoutingError, checked_binding_arguments, checked_exchange_name
from metadata_state.records import EXCHANGE_DESTINATION, QUEUE_DESTINATION, BindingRecord
from metadata_state.replies import Created, Exists, NotFound

BINDINGS = "/api/bindings"
TO_QUEUE = "/api/bindings/{vhost}/e/{exchange}/q/{q}"
TO_EXCHANGE = "/api/bindings/{vhost}/e/{exchange}/e/{destination}"
EXCHANGE_BINDINGS = "/api/exchanges/{vhost}/{exchange}/bindings/"


class Binding(RequestBody):
    """A binding's routing key and arguments (a headers binding's tests, with `x-match`)."""

    optional = True
    routing_key: Annotated[str, Meta(max_length=MAX_ROUTING_KEY_BYTES)] = ""
    arguments: dict[str, Any] = {}


def binding_json(record: BindingRecord) -> dict[str, Any]:
    """A binding as RabbitMQ's management API shows it."""
    return {
        "source": record.source,
        "vhost": record.vhost,
        "destination": record.destination,
        "destination_type": record.destination_type,
        "routing_key": record.routing_key,
        "arguments": record.arguments,
        "properties_key": record.properties_key,
    }


def _answer(request: web.Request, bindings: list[BindingRecord]) -> web.Response:
    caller = principal(request)
    return json_answer(
        [
            binding_json(b)
            for b in bindings
            if caller.lists_in(b.vhost, b.source) or caller.lists_in(b.vhost, b.destination)
        ]
    )


def _in_vhost(request: web.Request, vhost: str) -> list[BindingRecord]:
    return request.app[METADATA].bindings_in(vhost)


@route("GET", BINDINGS, access=Access.AUTHENTICATED, summary="list bindings", responses={"200": "bindings"})
async def list_bindings(request: web.Request) -> web.StreamResponse:
    """GET /api/bindings: those the caller holds a permission on the source or destination of."""
    await await_revision(request)
    metadata = request.app[METADATA]
    return _answer(request, [b for vhost in metadata.vhosts for b in metadata.bindings_in(vhost.name)])


@route(
    "GET",
    BINDINGS + "/{vhost}",
    access=Access.AUTHENTICATED,
    summary="list a vhost's bindings",
    responses={"200": "bindings", "404": "no such vhost"},
)
async def list_vhost_bindings(request: web.Request) -> web.StreamResponse:
    """GET /api/bindings/{vhost}."""
    await await_revision(request)
    return _answer(request, _in_vhost(request, vhost_of(request)))


@route(
    "GET",
    EXCHANGE_BINDINGS + "source",
    access=Access.AUTHENTICATED,
    summary="the bindings an exchange is the source of",
    responses={"200": "bindings"},
)
async def bindings_from(request: web.Request) -> web.StreamResponse:
    """GET /api/exchanges/{vhost}/{exchange}/bindings/source."""
    await await_revision(request)
    name = exchange_of(request, default=False)
    return _answer(request, [b for b in _in_vhost(request, vhost_of(request)) if b.source == name])


@route(
    "GET",
    EXCHANGE_BINDINGS + "destination",
    access=Access.AUTHENTICATED,
    summary="the bindings an exchange is the destination of",
    responses={"200": "bindings"},
)
async def bindings_to(request: web.Request) -> web.StreamResponse:
    """GET /api/exchanges/{vhost}/{exchange}/bindings/destination."""
    await await_revision(request)
    name = exchange_of(request, default=False)
    found = _in_vhost(request, vhost_of(request))
    return _answer(
        request, [b for b in found if b.destination_type == EXCHANGE_DESTINATION and b.destination == name]
    )


def _between(request: web.Request) -> tuple[str, str, str, str]:
    """The vhost, source, destination type and destination a binding path names."""
    vhost, source = vhost_of(request), exchange_of(request, default=False)
    if "q" in request.match_info:
        return vhost, source, QUEUE_DESTINATION, request.match_info["q"]
    try:
        destination = checked_exchange_name(request.match_info["destination"])
    except RoutingError as exc:
        raise bad(str(exc)) from exc
    return vhost, source, EXCHANGE_DESTINATION, destination


def _matching(request: web.Request) -> list[BindingRecord]:
    vhost, source, kind, destination = _between(request)
    require(principal(request), Access.ANY_QUEUE_PERMISSION, source, resource="exchange", vhost=vhost)
    return [
        b
        for b in _in_vhost(request, vhost)
        if (b.source, b.destination_type, b.destination) == (source, kind, destination)
    ]


@route(
    "GET",
    TO_QUEUE,
    access=Access.ANY_QUEUE_PERMISSION,
    summary="the bindings of an exchange to a queue",
    responses={"200": "bindings"},
)
@route(
    "GET",
    TO_EXCHANGE,
    access=Access.AUTHENTICATED,
    summary="the bindings of an exchange to an exchange",
    responses={"200": "bindings"},
)
async def list_between(request: web.Request) -> web.StreamResponse:
    """GET /api/bindings/{vhost}/e/{exchange}/q/{q} (or /e/{destination})."""
    await await_revision(request)
    return _answer(request, _matching(request))


@route(
    "GET",
    TO_QUEUE + "/{props}",
    access=Access.ANY_QUEUE_PERMISSION,
    summary="one binding of an exchange to a queue",
    responses={"200": "the binding", "404": "no such binding", "409": "the key names several (ambiguous)"},
)
@route(
    "GET",
    TO_EXCHANGE + "/{props}",
    access=Access.AUTHENTICATED,
    summary="one binding of an exchange to an exchange",
    responses={"200": "the binding", "404": "no such binding", "409": "the key names several (ambiguous)"},
)
async def get_binding(request: web.Request) -> web.StreamResponse:
    """GET /api/bindings/{vhost}/e/{exchange}/q/{q}/{props} (or /e/{destination}/{props})."""
    await await_revision(request)
    return json_answer(binding_json(_named(request)))


def _named(request: web.Request) -> BindingRecord:
    """The one binding the path names; 409 when its properties key names several (a routing key with a
    `~` in it can look like another binding's key and digest): none is picked for the caller."""
    props = request.match_info["props"]
    found = [b for b in _matching(request) if b.properties_key == props]
    if not found:
        raise ApiError(404, "not_found", f"no binding '{props}' between these")
    if len(found) > 1:
        raise ApiError(409, "ambiguous", f"'{props}' names {len(found)} bindings between these")
    return found[0]


def _location(binding: BindingRecord) -> str:
    """The path of one binding, each segment percent-encoded (a routing key may hold any character)."""
    kind = "q" if binding.destination_type == QUEUE_DESTINATION else "e"
    segments = (binding.vhost, binding.source, binding.destination, binding.properties_key)
    vhost, source, destination, props = (quote(segment, safe="") for segment in segments)
    return f"{BINDINGS}/{vhost}/e/{source}/{kind}/{destination}/{props}"


@route(
    "POST",
    TO_QUEUE,
    access=Access.WRITE,
    summary="bind an exchange to a queue",
    responses={"201": "bound (Location is the binding's path)", "404": "no such exchange or queue"},
    body=Binding,
    about=(
        '`{"routing_key", "arguments"}`: needs write permission on the queue and read permission on '
        "the exchange, as RabbitMQ's `queue.bind`; binding twice with the same key and arguments is "
        "one binding; the answer names the routing revision after it (`X-Quorumq-Routing-Revision`)"
    ),
)
@route(
    "POST",
    TO_EXCHANGE,
    access=Access.AUTHENTICATED,
    summary="bind an exchange to an exchange",
    responses={"201": "bound (Location is the binding's path)", "404": "no such exchange"},
    body=Binding,
    about="as a binding to a queue; needs write permission on the destination and read on the source",
)
@on_meta_leader
async def bind(request: web.Request) -> web.StreamResponse:
    """POST /api/bindings/{vhost}/e/{exchange}/q/{q} (or /e/{destination}): 201."""
    vhost, source, kind, destination = _between(request)
    caller = principal(request)
    require(caller, Access.WRITE, destination, resource=kind, vhost=vhost)
    require(caller, Access.READ, source, resource="exchange", vhost=vhost)
    given = await read_body_as(request, Binding)
    if len(given.routing_key.encode()) > MAX_ROUTING_KEY_BYTES:
        raise bad(f"routing_key is at most {MAX_ROUTING_KEY_BYTES} bytes of UTF-8")
    exchange = request.app[METADATA].exchange(vhost, source)
    if exchange is None:
        raise ApiError(404, "not_found", f"no exchange '{source}' in vhost '{vhost}'")
    try:
        arguments = checked_binding_arguments(exchange.type, given.arguments)
    except RoutingError as exc:
        raise bad(str(exc)) from exc
    require_read_everywhere(request)
    binding = BindingRecord(vhost, source, destination, kind, given.routing_key, arguments)
    if not request.app[METADATA].has_binding(binding):
        check_routing_room(request.app, bindings=1)
    reply = await proposed(request.app[METADATA_DOOR].bind(binding))
    if isinstance(reply, NotFound):
        raise ApiError(404, "not_found", reply.reason)
    if not isinstance(reply, (Created, Exists)):
        raise bad(getattr(reply, "reason", str(reply)))
    response = json_answer(binding_json(binding), status=201)
    response.headers["Location"] = _location(binding)
    return with_revision(response, request.app[METADATA])


@route(
    "DELETE",
    TO_QUEUE + "/{props}",
    access=Access.WRITE,
    summary="unbind an exchange from a queue",
    responses={"204": "unbound", "404": "no such binding", "409": "the key names several (ambiguous)"},
)
@route(
    "DELETE",
    TO_EXCHANGE + "/{props}",
    access=Access.AUTHENTICATED,
    summary="unbind an exchange from an exchange",
    responses={"204": "unbound", "404": "no such binding", "409": "the key names several (ambiguous)"},
)
@on_meta_leader
async def unbind(request: web.Request) -> web.StreamResponse:
    """DELETE /api/bindings/{vhost}/e/{exchange}/q/{q}/{props} (or /e/{destination}/{props}): 204."""
    binding = _named(request)
    caller = principal(request)
    require(caller, Access.WRITE, binding.destination, resource=binding.destination_type, vhost=binding.vhost)
    require(caller, Access.READ, binding.source, resource="exchange", vhost=binding.vhost)
    require_read_everywhere(request)
    reply = await proposed(request.app[METADATA_DOOR].unbind(binding))
    if isinstance(reply, NotFound):
        raise ApiError(404, "not_found", reply.reason)
    return with_revision(web.Response(status=204), request.app[METADATA])
