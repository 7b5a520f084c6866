"""HTTP endpoints for virtual hosts, in RabbitMQ's management shapes (`/api/vhosts/{vhost}`, `%2F` for
`/`); changes run on the metadata leader (docs/decisions/0029-the-vhost-is-part-of-a-name.md)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from aiohttp import web
from msgspec import Meta

from api.access import Access
from api.app_keys import FORMATS, METADATA, METADATA_DOOR
from api.auth import principal
from api.endpoints import route
from api.errors import ApiError
from api.forwarding import on_meta_leader
from api.request_bodies import RequestBody, read_body_as
from api.routing_names import vhost_of
from api.routing_revision import with_revision
from api.validation import bad, check_vhost_name
from metadata_state.codec import VHOST_CODEC_VERSION
from metadata_state.records import FULL_ACCESS, VhostRecord
from metadata_state.replies import Created, InUse, Invalid, NotFound
from metadata_state.vhost_names import DEFAULT_VHOST

VHOST = "/api/vhosts/{vhost}"
MAX_VHOSTS = 1024
"""How many vhosts a cluster may hold (besides `/`): the metadata stays bounded."""
MAX_DESCRIPTION = 1024
MAX_TAGS = 32


class VhostDeclaration(RequestBody):
    """A vhost's description and tags (RabbitMQ's; a comma-separated string of tags is taken too)."""

    optional: ClassVar[bool] = True
    description: Annotated[str, Meta(max_length=MAX_DESCRIPTION)] = ""
    tags: list[Annotated[str, Meta(min_length=1, max_length=64)]] | str = []
    default_queue_type: Annotated[str, Meta(description="quorum: every queue here is one")] = "quorum"


def vhost_json(record: VhostRecord) -> dict[str, Any]:
    """A vhost as RabbitMQ's management API shows one."""
    return {
        "name": record.name,
        "description": record.description,
        "tags": list(record.tags),
        "default_queue_type": "quorum",
        "tracing": False,
    }


def _visible(request: web.Request) -> list[VhostRecord]:
    """The vhosts the caller holds permissions in (all, for an administrator)."""
    caller = principal(request)
    return [v for v in request.app[METADATA].vhosts if caller.administrator or caller.holds_rights_in(v.name)]


@route(
    "GET",
    "/api/vhosts",
    access=Access.AUTHENTICATED,
    summary="list vhosts",
    responses={"200": "the vhosts the caller holds permissions in (all, for administrators)"},
)
async def list_vhosts(request: web.Request) -> web.StreamResponse:
    """GET /api/vhosts."""
    return web.json_response([vhost_json(v) for v in _visible(request)])


@route(
    "GET",
    VHOST,
    access=Access.AUTHENTICATED,
    summary="one vhost",
    responses={"200": "the vhost", "404": "no such vhost (or none the caller holds permissions in)"},
)
async def get_vhost(request: web.Request) -> web.StreamResponse:
    """GET /api/vhosts/{vhost}."""
    name = vhost_of(request)
    for record in _visible(request):
        if record.name == name:
            return web.json_response(vhost_json(record))
    raise ApiError(404, "not_found", f"no vhost '{name}'")


@route(
    "PUT",
    VHOST,
    access=Access.ADMINISTRATOR,
    summary="create or update a vhost",
    responses={"201": "created", "204": "updated", "400": "a queue of '/' has its name", "429": "too many"},
    body=VhostDeclaration,
    about="RabbitMQ's body: `description`, `tags` (a list, or a comma-separated string); a vhost is its own "
    "namespace of queues, exchanges, bindings, policies and permissions (docs/use/vhosts.md); as RabbitMQ's, "
    "the user who creates one is given every permission in it",
)
@on_meta_leader
async def put_vhost(request: web.Request) -> web.StreamResponse:
    """PUT /api/vhosts/{vhost}: 201 created, 204 updated."""
    name = check_vhost_name(request.match_info["vhost"])
    if name == DEFAULT_VHOST:
        raise ApiError(409, "reserved", "the default vhost '/' always exists and cannot be changed")
    given = await read_body_as(request, VhostDeclaration)
    tags = (
        [t.strip() for t in given.tags.split(",") if t.strip()] if isinstance(given.tags, str) else given.tags
    )
    if len(tags) > MAX_TAGS:
        raise bad(f"a vhost has at most {MAX_TAGS} tags")
    if given.default_queue_type != "quorum":
        raise bad("every queue here is a quorum queue: default_queue_type must be 'quorum'")
    metadata = request.app[METADATA]
    if not metadata.has_vhost(name) and len(metadata.vhosts) > MAX_VHOSTS:
        raise ApiError(429, "too_many_vhosts", f"a cluster holds at most {MAX_VHOSTS} vhosts besides '/'")
    request.app[FORMATS].require_metadata(VHOST_CODEC_VERSION, "no vhosts")
    door = request.app[METADATA_DOOR]
    reply = await door.declare_vhost(name, given.description, tags)
    if isinstance(reply, Invalid):
        raise bad(reply.reason)
    if not isinstance(reply, Created):
        return web.Response(status=204)
    creator = principal(request).name
    if creator in metadata.users:  # as RabbitMQ's management API: its creator may use it at once
        await door.set_permissions(creator, FULL_ACCESS, FULL_ACCESS, FULL_ACCESS, name)
    return web.Response(status=201)


@route(
    "DELETE",
    VHOST,
    access=Access.ADMINISTRATOR,
    summary="delete a vhost",
    responses={
        "204": "deleted, with its exchanges, bindings, policies and permissions",
        "409": "it holds queues",
    },
    about="refused while the vhost holds a queue (delete its queues first: no message goes with a vhost)",
)
@on_meta_leader
async def delete_vhost(request: web.Request) -> web.StreamResponse:
    """DELETE /api/vhosts/{vhost}: 204."""
    name = check_vhost_name(request.match_info["vhost"])
    if name == DEFAULT_VHOST:
        raise ApiError(409, "reserved", "the default vhost '/' cannot be deleted")
    request.app[FORMATS].require_metadata(VHOST_CODEC_VERSION, "no vhosts")
    reply = await request.app[METADATA_DOOR].delete_vhost(name)
    if isinstance(reply, NotFound):
        raise ApiError(404, "not_found", reply.reason)
    if isinstance(reply, InUse):
        raise ApiError(409, "in_use", f"{reply.reason}: delete them first")
    return with_revision(web.Response(status=204), request.app[METADATA])  # its exchanges went with it
