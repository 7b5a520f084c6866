"""Each endpoint is declared once, on its handler (`api.endpoints.route`): its route, its access rule, its
request body as a struct that both checks a request and gives the OpenAPI schema; a bad body is a 400
naming the field, as the hand-written checks answered."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from in_process_node import InProcessNode, in_process_node

from api import endpoints, queue_handlers
from api.access import Access
from api.app import ENDPOINTS
from api.endpoints import declared, route
from api.openapi import REFERENCE, spec
from api.request_bodies import RequestBody

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry of its own for a test that declares endpoints."""
    monkeypatch.setattr(endpoints, "_DECLARED", [])
    monkeypatch.setattr(endpoints, "_ACCESS", {})


async def _handler(request: Any) -> Any:
    raise NotImplementedError


@pytest.mark.usefixtures("empty_registry")
def test_a_method_and_path_declared_twice_is_refused() -> None:
    declare = route("GET", "/api/twice", access=Access.READ, summary="once", responses={"200": "ok"})
    declare(_handler)
    with pytest.raises(ValueError, match="GET /api/twice is declared twice"):
        declare(_handler)
    assert endpoints.access_rule("GET", "/api/twice") is Access.READ


@pytest.mark.usefixtures("empty_registry")
def test_a_module_whose_endpoints_are_not_registered_is_refused() -> None:
    route("GET", "/api/forgotten", access=Access.PUBLIC, summary="s", responses={"200": "ok"})(_handler)
    with pytest.raises(ValueError, match=__name__):
        declared(queue_handlers)
    assert [e.path for e in declared(queue_handlers, sys.modules[__name__])] == ["/api/forgotten"]


def test_publish_is_the_first_route_registered() -> None:
    """The dispatcher tries the routes under /api/queues in the order they are added."""
    assert (ENDPOINTS[0].method, ENDPOINTS[0].path) == ("POST", "/api/queues/{q}/messages")


def test_each_struct_body_is_the_schema_of_its_operation_in_the_document() -> None:
    document = spec(ENDPOINTS)
    structs = [e for e in ENDPOINTS if isinstance(e.body, type)]
    assert {e.body for e in structs} >= {queue_handlers.QueueDeclaration, queue_handlers.GetRequest}
    for endpoint in structs:
        assert isinstance(endpoint.body, type) and issubclass(endpoint.body, RequestBody)
        name = endpoint.body.__name__
        body = document["paths"][endpoint.path][endpoint.method.lower()]["requestBody"]
        schema = {"schema": {"$ref": REFERENCE.format(name=name)}}
        packed = {"application/msgpack": schema} if endpoint.body.packed else {}
        assert body["content"] == {"application/json": schema} | packed
        assert body["required"] is not endpoint.body.optional
        _, made = msgspec.json.schema_components([endpoint.body], ref_template=REFERENCE)
        assert document["components"]["schemas"][name] == made[name]


def test_a_struct_that_ignores_other_fields_says_so_in_the_document() -> None:
    schemas = spec(ENDPOINTS)["components"]["schemas"]
    assert schemas["QueueDeclaration"]["additionalProperties"] is False
    assert "additionalProperties" not in schemas["GetRequest"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessNode]:
    async with in_process_node(Path(tmp_path_factory.mktemp("endpoints"))) as running:
        await running.declare("e-q")
        yield running


JSON_BODY = {"Content-Type": "application/json"}


@IN_MODULE_LOOP
@pytest.mark.parametrize(
    ("method", "path", "request_body", "reason"),
    [
        ("PUT", "/api/queues/e-new", {"json": {"arguments": [1]}}, "arguments must be an object, got a list"),
        (
            "PUT",
            "/api/queues/e-new",
            {"json": {"arguments": {}, "b": 1, "a": 2}},
            "unknown fields ['a', 'b']",
        ),
        ("PUT", "/api/queues/e-new", {"json": [1]}, "body must be a JSON object"),
        ("PUT", "/api/queues/e-new", {"data": b"{no", "headers": JSON_BODY}, "body is not valid JSON"),
        ("PATCH", "/api/queues/e-q", {"json": {}}, "arguments is required"),
        ("PATCH", "/api/queues/e-q", {"data": b"", "headers": JSON_BODY}, "body is not valid JSON"),
        ("POST", "/api/queues/e-q/get", {"json": {"count": 0}}, "count must be an integer >= 1"),
        (
            "POST",
            "/api/queues/e-q/get",
            {"json": {"ack": "often"}},
            "ack must be 'auto' or 'manual', got 'often'",
        ),
        ("POST", "/api/queues/e-q/get", {"json": {"since": "soon"}}, "since must be epoch milliseconds"),
        ("POST", "/api/queues/e-q/consumers/c/settle", {"json": {}}, "below is required"),
        ("POST", "/api/tokens", {"json": {"ttl_s": 10**9}}, "ttl_s must be an integer <= 604800"),
        ("PUT", "/api/users/e-user", {"json": {"password": "\ud800"}}, "password must be valid UTF-8 text"),
        ("PUT", "/api/users/e-user", {"json": {"password": "p", "tags": [1]}}, "tags[0] must be a string"),
        ("PUT", "/api/policies/e-p", {"json": {"definition": {"max-length": 1}}}, "pattern is required"),
        ("POST", "/api/queues/e-q/members", {"json": {"node": ""}}, "node must be a string of length >= 1"),
    ],
)
async def test_a_bad_body_is_a_400_bad_request_naming_what_is_wrong(
    api: InProcessNode, method: str, path: str, request_body: dict[str, Any], reason: str
) -> None:
    status, error = await api.call(method, path, **request_body)
    assert (status, error["error"]) == (400, "bad_request"), error
    assert reason in error["reason"]
    assert set(error) == {"error", "reason"}


@IN_MODULE_LOOP
async def test_an_optional_body_may_be_left_out_and_null_is_a_default(api: InProcessNode) -> None:
    assert (await api.call("PUT", "/api/queues/e-q"))[0] == 204
    assert (await api.call("POST", "/api/queues/e-q/get", json={"count": None, "max_bytes": None})) == (
        200,
        [],
    )
    status, token = await api.call("POST", "/api/tokens", json={"ttl_s": None})
    assert status == 400 and "stored users" in token["reason"]  # the guest is no stored user: past the body
