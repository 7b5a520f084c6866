"""HTTP endpoints for users, permissions, bearer tokens and `whoami` (changes run on the metadata leader)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from aiohttp import web
from msgspec import UNSET, Meta, UnsetType

from api.access import Access
from api.app_keys import CONFIG, METADATA, METADATA_DOOR, PASSWORD_CHECKER
from api.auth import principal
from api.endpoints import route
from api.errors import ApiError
from api.forwarding import on_meta_leader
from api.request_bodies import RequestBody, read_body_as
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
from metadata_state.records import ADMINISTRATOR, UserRecord
from metadata_state.replies import Created, Invalid, NotFound, Reply

USER = "/api/users/{user}"


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
    permissions = {"configure": record.configure, "write": record.write, "read": record.read}
    return {"name": record.name, "tags": list(record.tags), "permissions": permissions}


def _user_name(request: web.Request) -> str:
    try:
        name = check_user_name(request.match_info["user"])
    except UserError as exc:
        raise bad(str(exc)) from exc
    if name == GUEST:
        raise ApiError(409, "reserved", "'guest' is the built-in loopback user and cannot be changed")
    return name


def _record(metadata: MetadataView, name: str) -> UserRecord:
    record = metadata.users.get(name)
    if record is None:
        raise ApiError(404, "not_found", f"no user '{name}'")
    return record


def _applied(reply: Reply) -> Reply:
    """The reply of a user change, or the HTTP error of a refused one."""
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
    return web.json_response(user_json(_record(request.app[METADATA], _user_name(request))))


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
    name = _user_name(request)
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
    reply = _applied(await request.app[METADATA_DOOR].put_user(name, password_hash, tags))
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
    name = _user_name(request)
    record = _record(metadata, name)
    if name == principal(request).name:
        raise ApiError(409, "self", "a user cannot delete itself")
    if record.is_administrator:
        _refuse_losing_last_administrator(metadata, name)
    _applied(await request.app[METADATA_DOOR].delete_user(name))
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
    """PUT /api/users/{user}/permissions `{"configure", "write", "read"}` (regexes; "" grants nothing)."""
    name = _user_name(request)
    _record(request.app[METADATA], name)
    given = await read_body_as(request, Permissions)
    try:
        patterns = [check_pattern(kind, getattr(given, kind)) for kind in ("configure", "write", "read")]
    except UserError as exc:
        raise bad(str(exc)) from exc
    _applied(await request.app[METADATA_DOOR].set_permissions(name, *patterns))
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
    permissions = {"configure": caller.configure, "write": caller.write, "read": caller.read}
    tags = [ADMINISTRATOR] if caller.administrator else []
    return web.json_response({"name": caller.name, "tags": tags, "permissions": permissions})


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
