"""What a web page can make a browser send to a node, refused before anyone logs in (decision 0020).

A page of any site can post forms, `fetch` and open WebSockets to a node, and a page whose name the
attacker rebinds to the node's address (DNS rebinding) is even served from it. So:

- a `Host` the node does not go by is 421 `misdirected_request`: it goes by its advertised name, the
  host it listens on, `localhost`, any IP address (a literal address cannot be rebound) and the names
  of `allowed_hosts` (`*`: any);
- a request that acts (any method but GET, HEAD and OPTIONS, and every WebSocket upgrade) from another
  origin (an `Origin` other than the node's own, or `Sec-Fetch-Site: cross-site`) is 403
  `cross_origin`;
- the body of a request that acts must be JSON or msgpack, which no HTML form can send: 415
  `unsupported_media_type` otherwise;
- every answer says `X-Content-Type-Options: nosniff` and `X-Frame-Options: DENY`, `Cache-Control:
  no-store` unless it says otherwise (answers carry message bodies and queue names), and under
  `tls_http` `Strict-Transport-Security`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware
from yarl import URL

from api.app_keys import CONFIG
from api.errors import error_response
from cluster.config import NodeConfig

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
BODY_TYPES = frozenset({"application/json", "application/msgpack"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ANY_HOST = "*"
HSTS = "max-age=31536000"


def host_names(config: NodeConfig) -> frozenset[str]:
    """The names a node answers to besides IP addresses: `localhost`, the host it listens on, the one
    it advertises and `allowed_hosts`."""
    advertised = URL(config.http_url).host or ""
    return frozenset(
        _name(host) for host in ("localhost", config.http.host, advertised, *config.allowed_hosts)
    )


def browser_guard(config: NodeConfig) -> Middleware:
    """The middleware refusing a foreign `Host`, a cross-origin request that acts and a form's body."""
    names = host_names(config)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if host is not None and not _answers_to(names, host):
            return error_response(421, "misdirected_request", f"this node does not go by the name {host!r}")
        if _acts(request) and from_another_origin(request):
            return error_response(403, "cross_origin", "a request from a page of another origin may not act")
        if _acts(request) and request.body_exists and request.content_type not in BODY_TYPES:
            return error_response(
                415, "unsupported_media_type", "a body must be application/json or application/msgpack"
            )
        return await handler(request)

    return guard


def from_another_origin(request: web.Request) -> bool:
    """Whether a browser says this request comes from a page of another origin than the node's: an
    `Origin` (`null` included) other than this request's `Host`, or `Sec-Fetch-Site: cross-site`."""
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return True
    origin = request.headers.get("Origin")
    if origin is None:
        return False
    _, sep, authority = origin.partition("://")
    return not sep or authority.lower() != request.headers.get("Host", "").lower()


async def secure_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: the headers every answer carries."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers.setdefault("Cache-Control", "no-store")
    if request.app[CONFIG].tls_http:
        response.headers["Strict-Transport-Security"] = HSTS


def _acts(request: web.Request) -> bool:
    return request.method not in SAFE_METHODS or request.headers.get("Upgrade", "").lower() == "websocket"


def _answers_to(names: frozenset[str], host: str) -> bool:
    name = _name(host)
    if ANY_HOST in names or name in names:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _name(host: str) -> str:
    """A `Host` header's name: without its port or an IPv6 address's brackets, lower case, without a
    trailing dot."""
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")
