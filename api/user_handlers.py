"""HTTP endpoints for users, permissions, bearer tokens and `whoami` (changes run on the metadata leader)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar

from aiohttp import web
from msgspec import UNSET, Meta, UnsetType

from api.access import Access
from api.app_keys import CONFIG, FORMATS, METADATA, METADATA_DOOR, PASSWORD_CHECKER
from api.auth import principal
from api.endpoints import route
from api.errors import ApiError
from api.forwarding import on_meta_leader
from api.request_bodies import RequestBody, read_body_as
from api.routing_names import vhost_of
from api.tokens import DEFAULT_TTL_S, MAX_TTL_S, issue_token
from api.validation import bad
from cluster.metadata.metadata_view import MetadataView
from cluster.security.users import (
    GUEST,
    KNOWN_TAGS,
    UserError,
    check_password,
    check_pattern,
    check_tags,
    check_user_name,
)
from metadata_state.codec import VHOST_CODEC_VERSION
from metadata_state.records import ADMINISTRATOR, NO_PERMISSIONS, UserRecord
from metadata_state.records import Permissions as PermissionPatterns
from metadata_state.replies import Created, Invalid, NotFound, Reply
from metadata_state.vhost_names import DEFAULT_VHOST

USER = "/api/users/{user}"
PERMISSION = "/api/permissions/{vhost}/{user}"


class UserChange(RequestBody):
    """A user's password and tags: both needed for a new user; a field left out keeps what it was."""

    password: str | UnsetType = UNSET
    tags: Annotated[list[str], Meta(description=f"of {', '.join(sorted(KNOWN_TAGS))}")] | UnsetType = UNSET


class Permissions(RequestBody):
    """A user's permissions: RE2 regexes of the queue names it may configure, write and read ("" grants
    nothing)."""

    configure: str = ""
    write: str = ""
    read: str = ""


class TokenRequest(RequestBody):
    """A bearer token's lifetime."""

    optional: ClassVar[bool] = True
    ttl_s: Annotated[
        Annotated[int, Meta(ge=1, le=MAX_TTL_S)] | None,
        Meta(description=f"seconds it is valid (default {DEFAULT_TTL_S}; never beyond the caller's token)"),
    ] = None


def user_json(record: UserRecord) -> dict[str, Any]:
    """A user as the API shows it (never the hash)."""
    given = record.all_permissions()
    return {
        "name": record.name,
        "tags": list(record.tags),
        **permissions_json(lambda vhost: given.get(vhost, NO_PERMISSIONS), given),
    }


def permissions_json(
    patterns_in: Callable[[str], PermissionPatterns], given: Mapping[str, PermissionPatterns]
) -> dict[str, Any]:
    """`permissions`, the patterns in the default vhost (as before vhosts), and `vhost_permissions`, the
    patterns by vhost for every vhost `given` names."""
    return {
        "permissions": patterns_json(patterns_in(DEFAULT_VHOST)),
        "vhost_permissions": {vhost: patterns_json(patterns) for vhost, patterns in given.items()},
    }


def patterns_json(patterns: PermissionPatterns) -> dict[str, str]:
    """Configure, write and read patterns by name."""
    configure, write, read = patterns
    return {"configure": configure, "write": write, "read": read}


def user_name(request: web.Request) -> str:
    try:
        name = check_user_name(request.match_info["user"])
    except UserError as exc:
        raise bad(str(exc)) from exc
    if name == GUEST:
        raise ApiError(409, "reserved", "'guest' is the built-in loopback user and cannot be changed")
    return name


def user_record(metadata: MetadataView, name: str) -> UserRecord:
    """User `name`'s record: 404 when there is none."""
    record = metadata.users.get(name)
    if record is None:
        raise ApiError(404, "not_found", f"no user '{name}'")
    return record


def applied(reply: Reply) -> Reply:
    """The reply of a user or permission change, or the HTTP error of a refused one."""
    if isinstance(reply, NotFound):
        raise ApiError(404, "not_found", reply.reason)
    if isinstance(reply, Invalid):
        raise ApiError(400, "bad_request", reply.reason)
    return reply


@route("GET", "/api/users", access=Access.ADMINISTRATOR, summary="list users", responses={"200": "users"})
async def list_users(request: web.Request) -> web.StreamResponse:
    """GET /api/users: every user with tags and permissions."""
    users = request.app[METADATA].users.values()
    return web.json_response([user_json(u) for u in sorted(users, key=lambda u: u.name)])


@route("GET", USER, access=Access.ADMINISTRATOR, summary="one user", responses={"200": "the user"})
async def get_user(request: web.Request) -> web.StreamResponse:
    """GET /api/users/{user}."""
    return web.json_response(user_json(user_record(request.app[METADATA], user_name(request))))


@route(
    "PUT",
    USER,
    access=Access.ADMINISTRATOR,
    summary="create or update a user",
    responses={"201": "created", "204": "updated", "409": "reserved name or last administrator"},
    body=UserChange,
)
@on_meta_leader
async def put_user(request: web.Request) -> web.StreamResponse:
    """PUT /api/users/{user} `{"password", "tags"}`: 201 created, 204 updated (no password keeps it)."""
    metadata = request.app[METADATA]
    name = user_name(request)
    change = await read_body_as(request, UserChange)
    existing = metadata.users.get(name)
    try:
        tags = check_tags((existing.tags if existing else []) if change.tags is UNSET else change.tags)
        new_password = change.password is not UNSET or existing is None
        password = check_password(change.password) if new_password else None
    except UserError as exc:
        raise bad(str(exc)) from exc
    if existing is not None and existing.is_administrator and ADMINISTRATOR not in tags:
        _refuse_losing_last_administrator(metadata, name)
    password_hash = ""
    if password is not None:
        password_hash = await request.app[PASSWORD_CHECKER].hash(password)
    reply = applied(await request.app[METADATA_DOOR].put_user(name, password_hash, tags))
    return web.Response(status=201 if isinstance(reply, Created) else 204)


def _refuse_losing_last_administrator(metadata: MetadataView, name: str) -> None:
    others = [u for u in metadata.users.values() if u.is_administrator and u.name != name]
    if not others:
        raise ApiError(409, "last_administrator", f"'{name}' is the last administrator")


@route(
    "DELETE",
    USER,
    access=Access.ADMINISTRATOR,
    summary="delete a user",
    responses={"204": "deleted", "409": "yourself or the last administrator"},
)
@on_meta_leader
async def delete_user(request: web.Request) -> web.StreamResponse:
    """DELETE /api/users/{user}: 204; never yourself nor the last administrator (409)."""
    metadata = request.app[METADATA]
    name = user_name(request)
    record = user_record(metadata, name)
    if name == principal(request).name:
        raise ApiError(409, "self", "a user cannot delete itself")
    if record.is_administrator:
        _refuse_losing_last_administrator(metadata, name)
    applied(await request.app[METADATA_DOOR].delete_user(name))
    return web.Response(status=204)


@route(
    "PUT",
    USER + "/permissions",
    access=Access.ADMINISTRATOR,
    summary="set a user's configure/write/read regexes",
    responses={"204": "set"},
    body=Permissions,
)
@on_meta_leader
async def set_permissions(request: web.Request) -> web.StreamResponse:
    """PUT /api/users/{user}/permissions `{"configure", "write", "read"}` (regexes; "" grants nothing),
    in the default vhost."""
    return await _put_permissions(request, DEFAULT_VHOST)


async def _put_permissions(request: web.Request, vhost: str) -> web.StreamResponse:
    name = user_name(request)
    user_record(request.app[METADATA], name)
    given = await read_body_as(request, Permissions)
    try:
        patterns = [check_pattern(kind, getattr(given, kind)) for kind in ("configure", "write", "read")]
    except UserError as exc:
        raise bad(str(exc)) from exc
    if vhost != DEFAULT_VHOST:
        request.app[FORMATS].require_metadata(VHOST_CODEC_VERSION, "no vhosts")
    configure, write, read = patterns
    applied(await request.app[METADATA_DOOR].set_permissions(name, configure, write, read, vhost))
    return web.Response(status=204)


def _permission_rows(record: UserRecord, vhost: str | None = None) -> list[dict[str, str]]:
    """A user's permissions as RabbitMQ lists them, one row per vhost (only `vhost`'s, when named)."""
    return [
        {"user": record.name, "vhost": where, **patterns_json(patterns)}
        for where, patterns in record.all_permissions().items()
        if vhost in (None, where)
    ]


@route(
    "GET",
    "/api/permissions",
    access=Access.ADMINISTRATOR,
    summary="every user's permissions, per vhost",
    responses={"200": "`[{user, vhost, configure, write, read}]`"},
)
async def list_permissions(request: web.Request) -> web.StreamResponse:
    """GET /api/permissions."""
    users = request.app[METADATA].users
    return web.json_response([row for name in sorted(users) for row in _permission_rows(users[name])])


@route(
    "GET",
    PERMISSION,
    access=Access.ADMINISTRATOR,
    summary="a user's permissions in a vhost",
    responses={"200": "`{user, vhost, configure, write, read}`", "404": "none given there"},
)
async def get_permissions(request: web.Request) -> web.StreamResponse:
    """GET /api/permissions/{vhost}/{user}."""
    vhost = vhost_of(request)
    rows = _permission_rows(user_record(request.app[METADATA], user_name(request)), vhost)
    if not rows:
        raise ApiError(404, "not_found", f"no permissions in vhost '{vhost}'")
    return web.json_response(rows[0])


@route(
    "PUT",
    PERMISSION,
    access=Access.ADMINISTRATOR,
    summary="set a user's configure/write/read regexes in a vhost",
    responses={"204": "set", "404": "no such user or vhost"},
    body=Permissions,
)
@on_meta_leader
async def put_vhost_permissions(request: web.Request) -> web.StreamResponse:
    """PUT /api/permissions/{vhost}/{user} `{"configure", "write", "read"}`."""
    return await _put_permissions(request, vhost_of(request))


@route(
    "DELETE",
    PERMISSION,
    access=Access.ADMINISTRATOR,
    summary="take a user's permissions in a vhost away",
    responses={"204": "cleared", "404": "none given there"},
)
@on_meta_leader
async def clear_permissions(request: web.Request) -> web.StreamResponse:
    """DELETE /api/permissions/{vhost}/{user}: in the default vhost, its patterns become ""."""
    vhost, name = vhost_of(request), user_name(request)
    request.app[FORMATS].require_metadata(VHOST_CODEC_VERSION, "no vhosts")
    applied(await request.app[METADATA_DOOR].clear_permissions(name, vhost))
    return web.Response(status=204)


@route(
    "GET",
    "/api/whoami",
    access=Access.AUTHENTICATED,
    summary="the caller's name, tags and permissions",
    responses={"200": "the caller"},
)
async def whoami(request: web.Request) -> web.StreamResponse:
    """GET /api/whoami: the caller's name, tags and permissions."""
    caller = principal(request)
    tags = [ADMINISTRATOR] if caller.administrator else []
    return web.json_response(
        {"name": caller.name, "tags": tags, **permissions_json(caller.patterns_in, caller.permissions)}
    )


@route(
    "POST",
    "/api/tokens",
    access=Access.AUTHENTICATED,
    summary="issue a bearer token",
    responses={"201": "token and expiry"},
    body=TokenRequest,
)
async def create_token(request: web.Request) -> web.StreamResponse:
    """POST /api/tokens `{"ttl_s"}`: 201 `{"token", "expires_ms"}`, a bearer token for the caller, expiring
    no later than the token the caller presented, if it presented one."""
    ttl_s = (await read_body_as(request, TokenRequest)).ttl_s or DEFAULT_TTL_S
    record = request.app[METADATA].users.get(principal(request).name)
    if record is None:
        raise ApiError(400, "bad_request", "tokens are issued to stored users, not to the built-in ones")
    caller_expires_ms = principal(request).expires_ms  # a token mints none that outlives it
    token, expires_ms = issue_token(
        request.app[CONFIG].cluster_secret, record, ttl_s, not_after_ms=caller_expires_ms
    )
    return web.json_response({"token": token, "expires_ms": expires_ms}, status=201)
