"""Who is calling and what they may do: authentication (Basic, bearer, node assertions, `guest:guest`
from loopback) and authorisation (RabbitMQ's configure/write/read regexes per queue, the administrator
tag).

Every endpoint declares its access rule (`api.endpoints.route`); a route without one needs an
administrator, so a new endpoint is never open by accident. Missing (from anywhere) or wrong credentials
answer 401, without a Basic challenge (which would fill a browser's credential cache, decision 0020),
valid credentials without the permission answer 403.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
from aiohttp import web

from api.access import Access, Principal
from api.app_keys import (
    CALLER,
    CONFIG,
    LOGIN_THROTTLE,
    METADATA,
    METADATA_DOOR,
    PASSWORD_CHECKER,
    REPLAY_GUARD,
    REVOKED_TOKENS,
)
from api.browser_guard import from_another_origin
from api.endpoints import access_rule
from api.errors import ApiError
from api.limits import read_body
from api.password_checker import PasswordChecker
from api.request_ids import REQUEST_ID_HEADER
from api.tokens import verify_token
from api.validation import queue_name
from cluster import node_logging
from cluster.config import ConfigError, NodeConfig, is_loopback_host
from cluster.errors import NotLeader
from cluster.metadata.metadata_door import MetadataDoor
from cluster.metadata.metadata_view import MetadataView
from cluster.security.peer_auth import (
    NODE_AUTH_HEADER,
    NODE_PRINCIPAL,
    body_digest_off_loop,
    verify_assertion,
)
from cluster.security.replay_guard import IssuedBeforeGuard, ReplayGuardFull
from cluster.security.source_address import source_key
from cluster.security.users import (
    GUEST,
    UserError,
    check_password,
    check_user_name,
)
from cluster.steady_clock import steady_wall_ms
from metadata_state.vhost_names import DEFAULT_VHOST, split

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
BOOTSTRAP_RETRY_S = 0.5


PRINCIPAL_KEY: web.RequestKey[Principal] = web.RequestKey("principal")
"""Where the auth middleware leaves the caller for the handlers (`principal`)."""


class Unauthenticated(Exception):
    """Credentials are missing or wrong; `status` is 401, or 503 while the user table is not ready."""

    def __init__(self, reason: str, status: int = 401) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


def is_loopback(request: web.Request) -> bool:
    """True when the TCP peer is a loopback address."""
    return is_loopback_host(request.remote or "")


def route_access(request: web.Request) -> Access:
    """The access rule of the matched route (administrator for routes without one)."""
    resource = request.match_info.route.resource
    if resource is None:  # no route matched: the 404/405 still needs a known caller
        return Access.AUTHENTICATED
    return access_rule(request.method, resource.canonical)


async def authenticate(request: web.Request) -> Principal | None:
    """The caller's principal, or None when no credentials came; raises Unauthenticated when wrong."""
    config, metadata = request.app[CONFIG], request.app[METADATA]
    assertion = request.headers.get(NODE_AUTH_HEADER)
    if assertion is not None:
        name = await _asserted_user(request, config.cluster_secret, assertion)
        return vouched_principal(config, metadata, name)
    header = request.headers.get("Authorization")
    if header is None:  # never anyone, not even from loopback: a proxy there would make everyone the guest
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "basic":
        return await _basic(request, value.strip())
    if scheme.lower() == "bearer":
        revoked = request.app[REVOKED_TOKENS]
        claims = verify_token(config.cluster_secret, value.strip(), metadata.users, revoked=revoked)
        if claims is None:
            raise Unauthenticated("invalid or expired token")
        return _known_user(metadata, claims.name, claims.expires_ms)
    raise Unauthenticated(f"unsupported authorization scheme {scheme!r}")


async def _asserted_user(request: web.Request, secret: str, assertion: str) -> str:
    """The user a node assertion names, if it was made for exactly this request and is used once. The
    body is read only once the assertion proved genuine; the assertion must still be valid when it has
    arrived (the replay guard forgets nonces once expired, by the latest time it was given)."""
    node = request.app[CONFIG].node
    asserted = verify_assertion(secret, assertion, request.method, request.raw_path, node=node)
    if asserted is None:
        raise Unauthenticated("invalid node assertion")
    if await body_digest_off_loop(await read_body(request)) != asserted.body_sha256:
        raise Unauthenticated("the body is not the one the node assertion was made for")
    now_ms = steady_wall_ms()
    if now_ms > asserted.expires_ms:
        raise Unauthenticated("node assertion expired while its body was read")
    try:
        if not request.app[REPLAY_GUARD].first_use(
            asserted.nonce, asserted.expires_ms, now_ms, by=asserted.user
        ):
            raise Unauthenticated("node assertion already used")
    except ReplayGuardFull as exc:
        raise Unauthenticated(f"too many node assertions at once: {exc}", status=503) from exc
    except IssuedBeforeGuard as exc:
        raise Unauthenticated(f"{exc}; retry with a new one", status=503) from exc
    return asserted.user


async def _basic(request: web.Request, value: str) -> Principal:
    try:
        name, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
    except (binascii.Error, ValueError) as exc:
        raise Unauthenticated("malformed basic credentials") from exc
    if not sep:
        raise Unauthenticated("malformed basic credentials")
    guest = functools.partial(
        admit_guest,
        request.app[CONFIG],
        request.app[METADATA],
        is_loopback(request),
        from_another_origin(request),
    )
    return await password_login(request.app, name, password, request.remote, guest)


async def password_login(
    app: web.Application, name: str, password: str, remote: str | None, admit_guest: Callable[[], None]
) -> Principal:
    """The principal of user `name` logging in with `password` from address `remote` (HTTP Basic, an AMQP
    connection's SASL), checked and throttled per source; `admit_guest` refuses the built-in guest
    (Unauthenticated) where it may not log in. Unauthenticated for wrong credentials."""
    if name == GUEST:  # never a stored user: refused at once, no check, no failed login
        admit_guest()
    throttle, source = app[LOGIN_THROTTLE], source_key(remote)
    throttle.refuse_if_blocked(source)
    metadata = app[METADATA]
    checker, record = app[PASSWORD_CHECKER], metadata.users.get(name)
    known = None if record is None else await checker.known_outcome(record, password)  # never `guest`
    if known is not None:  # no check of its own, so no place among its source's checks
        if not known:
            raise Unauthenticated("wrong user name or password")  # counted once, by the shared check
        assert record is not None
        return Principal.of(record)
    throttle.begin(source)
    failed = True  # also when the check is cut short: its result is unknown
    try:
        if name == GUEST:
            if password != GUEST:
                raise Unauthenticated("wrong user name or password")
            failed = False
            return Principal.superuser(GUEST)
        if not await checker.check(record, password):
            if not metadata.users_initialised:
                failed = False
                raise Unauthenticated("the user table is not initialised yet", status=503)
            raise Unauthenticated("wrong user name or password")
        assert record is not None
        failed = False
        return Principal.of(record)
    finally:
        throttle.end(source, failed)


def admit_guest(config: NodeConfig, metadata: MetadataView, loopback: bool, other_origin: bool) -> None:
    """Unauthenticated unless the built-in guest may log in: while this node keeps it (`guest_enabled`),
    from `loopback`, and not for a page of `other_origin` (decision 0020)."""
    if config.loopback_guest is False:
        raise Unauthenticated("the guest user is disabled on this node")
    if not guest_enabled(config, metadata):
        raise Unauthenticated(
            "the guest user is off on this node: an administrator exists (or is bootstrapped)"
        )
    if not loopback:
        raise Unauthenticated("the guest user may only connect from loopback")
    if other_origin:
        raise Unauthenticated("the guest user is refused to a page of another origin")


def guest_enabled(config: NodeConfig, metadata: MetadataView) -> bool:
    """Whether this node keeps the built-in guest: `loopback_guest` when set; unset, until a bootstrap
    user is configured or any administrator exists (RabbitMQ's `default_user` replacing `guest`)."""
    if config.loopback_guest is not None:
        return config.loopback_guest
    return not config.bootstrap_user and not any(u.is_administrator for u in metadata.users.values())


def vouched_principal(config: NodeConfig, metadata: MetadataView, name: str) -> Principal:
    """The principal of user `name`, whom another node vouches for (a node assertion, a publish forwarded
    over the peer transport); Unauthenticated when no such user is known here."""
    if name == NODE_PRINCIPAL or (name == GUEST and guest_enabled(config, metadata)):
        return Principal.superuser(name)
    return _known_user(metadata, name)


def _known_user(metadata: MetadataView, name: str, expires_ms: int | None = None) -> Principal:
    record = metadata.users.get(name)
    if record is None:
        raise Unauthenticated(f"no user {name!r}", status=401 if metadata.users_initialised else 503)
    return Principal.of(record, expires_ms)


def names_a_vhost(request: web.Request) -> bool:
    """Whether a one-segment queue path's `{q}` names a vhost (no queue of `/` takes a vhost's name):
    `GET /api/queues/{vhost}` is then that vhost's listing, as RabbitMQ's."""
    return "vhost" not in request.match_info and request.app[METADATA].has_vhost(request.match_info["q"])


def principal(request: web.Request) -> Principal:
    """The principal the middleware authenticated for this request."""
    return request[PRINCIPAL_KEY]


def require(
    caller: Principal,
    access: Access,
    queue: str | None,
    why: str = "",
    resource: str = "queue",
    vhost: str | None = None,
) -> None:
    """403 `forbidden`, naming the permission and the queue (a `qualified` name; or, in `vhost`, the
    `resource` of that name: an exchange; and `why` it is needed), unless `caller` passes `access`."""
    if queue is None:
        if not caller.may(access, None):
            raise ApiError(403, "forbidden", f"user '{caller.name}' lacks {access.value} permission{why}")
        return
    where, name = (vhost, queue) if vhost is not None else split(queue)
    if not caller.may_in(access, where, name):
        target = "" if access is Access.ADMINISTRATOR else f" on {resource} '{name}'"
        place = f" in vhost '{where}'" if target and where != DEFAULT_VHOST else ""
        raise ApiError(
            403, "forbidden", f"user '{caller.name}' lacks {access.value} permission{target}{place}{why}"
        )


class UnknownDestination(aiohttp.ClientError):
    """A call to a URL that is no member's registered HTTP address: no assertion is made for it."""


def _member_at(metadata: MetadataView, url: str) -> str:
    """The member whose registered HTTP address `url` is on; UnknownDestination for none."""
    for name, info in metadata.nodes.items():
        if url.startswith(info.http.rstrip("/") + "/"):
            return name
    raise UnknownDestination(f"no member of the cluster serves {url}")


async def vouch(request: web.Request, method: str, url: str, body: bytes = b"") -> dict[str, str]:
    """Headers for a call this handler makes to another node (forwarding, asking a queue's leader for
    stats) at its registered address, asserting the principal it serves for exactly that call on that
    node, so the other node applies the same permissions without seeing the caller's credentials."""
    to = _member_at(request.app[METADATA], url)
    headers = await request.app[CALLER].headers(method, url, body, user=principal(request).name, to=to)
    current = node_logging.request_id.get()
    return headers if current is None else {**headers, REQUEST_ID_HEADER: current}


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Authenticate the caller and check the route's access rule before the handler runs; what refuses
    the caller (Unauthenticated, LoginThrottled, a 403) is answered by `api.error_answers`."""
    access = route_access(request)
    if access is Access.PUBLIC or (access is Access.METRICS and request.app[CONFIG].metrics_public):
        return await handler(request)
    caller = await authenticate(request)
    if caller is None:
        raise Unauthenticated("authentication required")
    # validated before any permission pattern sees it
    queue = queue_name(request) if "q" in request.match_info else None
    if access is Access.QUEUE_OR_VHOST:
        access = Access.AUTHENTICATED if names_a_vhost(request) else Access.ANY_QUEUE_PERMISSION
    require(caller, access, queue)
    request[PRINCIPAL_KEY] = caller
    return await handler(request)


async def bootstrap_users(app: web.Application) -> AsyncIterator[None]:
    """Cleanup context: the metadata leader creates the configured bootstrap user once per cluster."""
    config = app[CONFIG]
    if config.bootstrap_user:
        try:
            check_user_name(config.bootstrap_user)
            check_password(config.bootstrap_password)
        except UserError as exc:
            raise ConfigError(f"bootstrap user: {exc}") from exc
        if config.bootstrap_user == GUEST:
            raise ConfigError("bootstrap user: 'guest' is the built-in loopback user")
    app[PASSWORD_CHECKER] = PasswordChecker()
    bootstrap = _bootstrap_loop(config, app[METADATA], app[METADATA_DOOR], app[PASSWORD_CHECKER])
    task = asyncio.get_running_loop().create_task(bootstrap)
    yield
    task.cancel()


async def _bootstrap_loop(
    config: NodeConfig, metadata: MetadataView, door: MetadataDoor, passwords: PasswordChecker
) -> None:
    password_hash: str | None = None  # hashed once needed: a restart in a running cluster never needs it
    while not metadata.users_initialised:
        if metadata.is_leader:
            if password_hash is None:
                password = config.bootstrap_password
                password_hash = await passwords.hash(password) if config.bootstrap_user else ""
            try:
                await door.bootstrap_users(config.bootstrap_user, password_hash)
            except NotLeader as exc:
                log.info("bootstrap user not created yet: %s", exc)
        await asyncio.sleep(BOOTSTRAP_RETRY_S)
