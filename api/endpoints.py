"""Each HTTP endpoint declared once, on its handler (`route`): its method and path, who may call it (the
access rule the auth middleware reads), its request body and what the OpenAPI document says of it.

A body read into a `RequestBody` struct gives both its checks and its schema in the document; a body
still read by hand (one a stream frame carries too) gives its schema as a `BodySchema`. `api.app`
registers the endpoints of the handler modules it names (`declared`); a route registered any other way
has no declared access rule, so it needs an administrator (`access_rule`): no endpoint is open by
accident.

Every endpoint of a queue (`/api/queues/{q}...`) or a policy (`/api/policies/{policy}`, and operator
policies') is served in a named vhost too, at RabbitMQ's path (`/api/queues/{vhost}/{q}...`,
`/api/policies/{vhost}/{policy}`: `in_vhost`), with the same access rule; the one-segment paths are the
default vhost's. Those paths are registered after all others, so a queue path's own words
(`queue_path_words`) win over a queue of that name in a vhost, which is why no such queue may be
declared there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from aiohttp import web

from api.access import Access
from api.request_bodies import RequestBody

QUEUE = "/api/queues/{q}"
VHOST_QUEUE = "/api/queues/{vhost}/{q}"
IN_A_VHOST = {
    QUEUE: VHOST_QUEUE,
    "/api/policies/{policy}": "/api/policies/{vhost}/{policy}",
    "/api/operator-policies/{policy}": "/api/operator-policies/{vhost}/{policy}",
}
"""The one-segment paths of the default vhost's queues and policies, and their paths in a named vhost."""
CONSUMER = QUEUE + "/consumers/{tag}"
Schema = dict[str, Any]
Content = Mapping[str, Schema]
"""An answer's media types, each with its schema (`{"application/json": {"schema": ...}}`)."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class Endpoint:
    """One endpoint: `method` on the route `path` (a template such as `/api/queues/{q}`), served by
    `handler` to callers that pass `access`.

    For the OpenAPI document: `summary`, `about` (a longer description, Markdown), `responses` (the
    statuses particular to it, each with what it means; the errors every route may answer are added),
    `content` (the media types and schemas of the answers that have one, by status), `query` (its query
    parameters) and `body` (its request body)."""

    method: str
    path: str
    handler: Handler
    access: Access
    summary: str
    responses: Mapping[str, str]
    about: str = ""
    content: Mapping[str, Content] = field(default_factory=dict)
    query: tuple[Schema, ...] = ()
    body: type[RequestBody] | None = None


_DECLARED: list[Endpoint] = []
_ACCESS: dict[tuple[str, str], Access] = {}


def route(
    method: str,
    path: str,
    *,
    access: Access,
    summary: str,
    responses: Mapping[str, str],
    about: str = "",
    content: Mapping[str, Content] | None = None,
    query: tuple[Schema, ...] = (),
    body: type[RequestBody] | None = None,
) -> Callable[[H], H]:
    """Declare the decorated handler as the endpoint serving `method` on `path` (the fields of
    `Endpoint`); a handler may serve several. Each method and path is declared once (ValueError)."""

    def declare(handler: H) -> H:
        if (method, path) in _ACCESS:
            raise ValueError(f"{method} {path} is declared twice")
        endpoint = Endpoint(
            method, path, handler, access, summary, responses, about, content or {}, query, body
        )
        _DECLARED.append(endpoint)
        _ACCESS[(method, path)] = access
        aliased = in_vhost(path)
        if aliased is not None:
            _ACCESS[(method, aliased)] = access
        return handler

    return declare


def in_vhost(path: str) -> str | None:
    """The path serving a queue's or a policy's endpoint `path` in a named vhost (None for any other)."""
    for default, named in IN_A_VHOST.items():
        if path == default or path.startswith(default + "/"):
            return named + path.removeprefix(default)
    return None


def queue_path_words() -> frozenset[str]:
    """The words that follow a queue in the declared queue paths (`messages`, `get`, ...): no queue of a
    vhost other than `/` may take one as its name, since `/api/queues/{x}/{word}` is that word's
    endpoint for queue x of `/`."""
    return frozenset(e.path.split("/")[4] for e in _DECLARED if e.path.startswith(QUEUE + "/"))


def parameter(name: str, schema: Schema, *, required: bool = False) -> Schema:
    """A query parameter of an endpoint, as the OpenAPI document gives it."""
    return {"name": name, "in": "query", "required": required, "schema": schema}


def declared(*modules: ModuleType) -> tuple[Endpoint, ...]:
    """The endpoints the handlers of `modules` declare, module by module in that order, each module's in
    the order it declares them. ValueError when a module not among them declared one: it would not be
    served."""
    names = [module.__name__ for module in modules]
    left_out = {endpoint.handler.__module__ for endpoint in _DECLARED} - set(names)
    if left_out:
        raise ValueError(f"the endpoints of {sorted(left_out)} are not registered")
    return tuple(endpoint for name in names for endpoint in _DECLARED if endpoint.handler.__module__ == name)


def access_rule(method: str, path: str) -> Access:
    """The access rule declared for `method` on the route `path` (HEAD is GET's); a route declared
    without `route` needs an administrator."""
    method = "GET" if method == "HEAD" else method
    return _ACCESS.get((method, path), Access.ADMINISTRATOR)
