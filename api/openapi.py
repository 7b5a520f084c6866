"""The OpenAPI 3 description of the whole HTTP API, served at `/api/openapi.json`, made from the
endpoints' declarations (`api.endpoints.route`): each operation's summary, who may call it, its
parameters, its request body (a `RequestBody` struct's schema, in `components`) and its answers, with the
errors every route may answer. The fuzzer generates valid and invalid requests from it
(`tests/security/test_api_fuzz.py`), and `docs/use/http-api.md` is made from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from aiohttp import web

from api.access import Access
from api.app_keys import OPENAPI
from api.endpoints import Endpoint, Schema, in_vhost, route
from api.request_bodies import RequestBody
from api.schemas import JSON, MSGPACK

REFERENCE = "#/components/schemas/{name}"
QUEUE_NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:\\-]{0,254}$"}
USER_NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._@\\-]{0,63}$"}
POLICY_NAME: Schema = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:@\\-]{0,127}$"}
PATH_PARAMETERS: dict[str, Schema] = {
    "q": QUEUE_NAME,
    "tag": {"type": "string", "minLength": 1},
    "user": USER_NAME,
    "policy": POLICY_NAME,
    "task": {"type": "string", "minLength": 1},
    "node": {"type": "string", "minLength": 1},
    "file": {"type": "string", "minLength": 1},
    "vhost": {"type": "string", "description": "a virtual host: `%2F` for `/`"},
    "exchange": {"type": "string", "minLength": 1, "description": "`amq.default` for the default exchange"},
    "destination": {"type": "string", "minLength": 1},
    "props": {"type": "string", "description": "a binding's properties key"},
}
ERROR: Schema = {
    "type": "object",
    "required": ["error", "reason"],
    "properties": {
        "error": {"type": "string"},
        "reason": {"type": "string"},
        "leader": {"type": ["string", "null"]},
        "leader_http": {"type": ["string", "null"]},
    },
}
UNAVAILABLE = (
    "no leader or quorum yet (retry, on `leader_http` when given); with error `outcome_unknown` the "
    "request was sent on (to the leader, or into the Raft log) and lost track of: it may have taken "
    "effect, so only a request safe to repeat (a read, a deduplicated publish) should be retried; with "
    "error `formats_not_yet_known` (and `Retry-After`) the request needs a format version not every node "
    "has said it reads yet (retry); with error `resource_alarm` (and `Retry-After`, the body naming "
    "`node` and `resource`) a publish was held back because a node holding a replica of the queue is "
    "in a disk or memory alarm (retry once consumers drained or space was freed); with error "
    "`overloaded` (and `Retry-After`, the body naming the `queue`) a publish was held back because the "
    "queue's leader holds as many proposals not yet applied as it takes (retry after `Retry-After`)"
)
WIRE_FORMATS = (
    "Publishes may also be sent as msgpack (`Content-Type: application/msgpack`, the same map with each "
    "body as bin), and deliveries are answered in msgpack on `Accept: application/msgpack`, bodies as "
    "bin: base64 inside JSON costs a third more bytes and an encode and decode per message."
)
WHO: dict[Access, str] = {
    Access.PUBLIC: "anyone, without credentials",
    Access.METRICS: "any authenticated user (anyone on a node with `metrics_public`)",
    Access.AUTHENTICATED: "any authenticated user",
    Access.ANY_QUEUE_PERMISSION: "a user with any permission (configure, write or read) on the queue",
    Access.QUEUE_OR_VHOST: (
        "a user with any permission on the queue; when the path names a vhost, any authenticated user"
    ),
    Access.CONFIGURE: "a user with configure permission on the queue",
    Access.WRITE: "a user with write permission on the queue",
    Access.READ: "a user with read permission on the queue",
    Access.CONFIGURE_ADMIN: "an administrator with configure permission on the queue",
    Access.ADMINISTRATOR: "an administrator",
    Access.NODE: "a node of the cluster, for itself (its node assertion)",
}
"""Who passes each access rule, as the document says it (`x-access`)."""


def spec(endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `endpoints`."""
    structs = sorted({e.body for e in endpoints if isinstance(e.body, type)}, key=lambda s: s.__name__)
    references, schemas = msgspec.json.schema_components(structs, ref_template=REFERENCE)
    bodies = dict(zip(structs, references, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        item = paths.setdefault(endpoint.path, _path_parameters(endpoint.path))
        item[endpoint.method.lower()] = _operation(endpoint, bodies)
    for endpoint in endpoints:  # after every other path, as they are registered
        alias = in_vhost(endpoint.path)
        if alias is not None:
            item = paths.setdefault(alias, _path_parameters(alias))
            same = {"x-same-as": f"{endpoint.method} {endpoint.path}"}
            item[endpoint.method.lower()] = {**_operation(endpoint, bodies), **same}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "quorumq",
            "version": "1",
            "description": "Raft-replicated quorum queues. Errors are JSON {error, reason}. " + WIRE_FORMATS,
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "basic": {"type": "http", "scheme": "basic"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
        "security": [{"basic": []}, {"bearer": []}],
        "paths": paths,
    }


def _path_parameters(path: str) -> dict[str, Any]:
    names = [part[1:-1] for part in path.split("/") if part.startswith("{")]
    if not names:
        return {}
    return {
        "parameters": [
            {"name": name, "in": "path", "required": True, "schema": PATH_PARAMETERS[name]} for name in names
        ]
    }


def _operation(endpoint: Endpoint, bodies: dict[type[RequestBody], Schema]) -> dict[str, Any]:
    responses: dict[str, Any] = {status: {"description": text} for status, text in endpoint.responses.items()}
    for status, content in endpoint.content.items():
        responses[status]["content"] = content
    public = endpoint.access is Access.PUBLIC
    errors = {
        "400": "bad input",
        "404": "unknown resource",
        "421": "a Host this node does not go by",
        "503": UNAVAILABLE,
    }
    if not public:
        errors |= {"401": "missing or wrong credentials", "403": "not permitted"}
    if endpoint.body is not None:
        errors["415"] = "a body neither JSON nor msgpack"
    for status, text in errors.items():
        responses.setdefault(status, {"description": text, "content": {JSON: {"schema": ERROR}}})
    operation: dict[str, Any] = {
        "summary": endpoint.summary,
        "x-access": {"rule": endpoint.access.value, "who": WHO[endpoint.access]},
        "responses": responses,
    }
    if endpoint.about:
        operation["description"] = endpoint.about
    if public:
        operation["security"] = []
    if endpoint.body is not None:
        body = endpoint.body
        schema = {"schema": bodies[body]}
        operation["requestBody"] = {
            "required": not body.optional,
            "content": {JSON: schema} | ({MSGPACK: schema} if body.packed else {}),
        }
    if endpoint.query:
        operation["parameters"] = list(endpoint.query)
    return operation


@route(
    "GET",
    "/api/openapi.json",
    access=Access.AUTHENTICATED,
    summary="this document",
    responses={"200": "the OpenAPI document"},
)
async def serve_spec(request: web.Request) -> web.StreamResponse:
    """GET /api/openapi.json: the document of the endpoints the application serves."""
    return web.json_response(request.app[OPENAPI])
