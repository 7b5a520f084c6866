"""The OpenAPI document describes exactly the registered routes, and every route has an access rule."""

from __future__ import annotations

from aiohttp import web
from security_helpers import ADMIN, call

from api.app import add_routes
from api.auth import ROUTE_ACCESS
from api.openapi import spec
from cli.node_processes import ProcessCluster

METHODS = {"GET", "PUT", "POST", "PATCH", "DELETE"}


def registered_routes() -> set[tuple[str, str]]:
    """(METHOD, path template) of every route the server registers (HEAD mirrors GET)."""
    router = web.UrlDispatcher()
    add_routes(router)
    return {
        (route.method, route.resource.canonical)
        for route in router.routes()
        if route.method in METHODS and route.resource is not None
    }


def documented_routes() -> set[tuple[str, str]]:
    """(METHOD, path template) of every operation in the OpenAPI document."""
    return {
        (method.upper(), path)
        for path, item in spec()["paths"].items()
        for method in item
        if method.upper() in METHODS
    }


def test_the_openapi_document_lists_exactly_the_registered_routes() -> None:
    assert documented_routes() == registered_routes()


def test_every_registered_route_has_an_access_rule() -> None:
    assert registered_routes() == set(ROUTE_ACCESS)


def test_every_path_parameter_is_declared() -> None:
    for path, item in spec()["paths"].items():
        declared = {p["name"] for p in item.get("parameters", [])}
        assert declared == {part[1:-1] for part in path.split("/") if part.startswith("{")}, path


async def test_the_document_is_served_to_authenticated_callers(secured: ProcessCluster) -> None:
    answer = await call("GET", secured.urls[2] + "/api/openapi.json", authorization=ADMIN)
    assert answer.status == 200
    assert answer.body == spec()
