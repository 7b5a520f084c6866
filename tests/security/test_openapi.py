"""The OpenAPI document describes exactly the registered routes, and every route has the access rule its
endpoint declares; a route registered without a declaration needs an administrator."""

from __future__ import annotations

from collections import Counter

from aiohttp import web
from security_helpers import ADMIN, call

from api.access import Access
from api.app import ENDPOINTS, add_routes
from api.endpoints import access_rule, in_vhost
from api.openapi import spec
from cli.node_processes import ProcessCluster

METHODS = {"GET", "PUT", "POST", "PATCH", "DELETE"}


def registered_routes() -> list[tuple[str, str]]:
    """(METHOD, path template) of every route the server registers (HEAD mirrors GET)."""
    router = web.UrlDispatcher()
    add_routes(router)
    return [
        (route.method, route.resource.canonical)
        for route in router.routes()
        if route.method in METHODS and route.resource is not None
    ]


def documented_routes() -> set[tuple[str, str]]:
    """(METHOD, path template) of every operation in the OpenAPI document."""
    return {
        (method.upper(), path)
        for path, item in spec(ENDPOINTS)["paths"].items()
        for method in item
        if method.upper() in METHODS
    }


def test_the_openapi_document_lists_exactly_the_registered_routes() -> None:
    assert documented_routes() == set(registered_routes())


def test_every_route_is_registered_once_with_the_access_rule_its_endpoint_declares() -> None:
    registered = registered_routes()
    assert [route for route, count in Counter(registered).items() if count > 1] == []
    declared = {(e.method, e.path): e.access for e in ENDPOINTS}
    declared |= {(e.method, alias): e.access for e in ENDPOINTS if (alias := in_vhost(e.path)) is not None}
    assert set(registered) == set(declared)
    assert all(access_rule(method, path) is declared[(method, path)] for method, path in registered)
    assert access_rule("HEAD", "/api/queues") is declared[("GET", "/api/queues")]


def test_a_route_without_a_declared_rule_needs_an_administrator() -> None:
    assert access_rule("GET", "/api/undeclared") is Access.ADMINISTRATOR
    assert access_rule("POST", "/api/queues") is Access.ADMINISTRATOR  # a path declared for GET only


def test_every_path_parameter_is_declared() -> None:
    for path, item in spec(ENDPOINTS)["paths"].items():
        declared = {p["name"] for p in item.get("parameters", [])}
        assert declared == {part[1:-1] for part in path.split("/") if part.startswith("{")}, path


async def test_the_document_is_served_to_authenticated_callers(secured: ProcessCluster) -> None:
    answer = await call("GET", secured.urls[2] + "/api/openapi.json", authorization=ADMIN)
    assert answer.status == 200
    assert answer.body == spec(ENDPOINTS)
