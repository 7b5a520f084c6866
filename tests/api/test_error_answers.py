"""One mapping from a failure to the API's answer (`api.error_answers.error_answer`), the same for a
request, a stream frame and a publish a peer passed on: status, `{"error", "reason"}` and the extras."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from api.app_keys import STATUS
from api.auth import Unauthenticated
from api.error_answers import error_answer, error_middleware
from api.errors import ApiError
from api.login_throttle import LoginThrottled
from cluster.errors import FormatsNotYetKnown, NotLeader, QueueFull, QueueNotFound, ResourceAlarmed
from cluster.membership.group_changes import MembershipRefused


@pytest.fixture
def app() -> web.Application:
    app = web.Application(middlewares=[error_middleware])
    app[STATUS] = SimpleNamespace(node_http=lambda node: f"http://{node}:8080")  # type: ignore[assignment]
    return app


@pytest.mark.parametrize(
    ("exc", "status", "body"),
    [
        (
            ApiError(400, "bad_request", "no", hint="h"),
            400,
            {"error": "bad_request", "reason": "no", "hint": "h"},
        ),
        (QueueNotFound("no queue 'q'"), 404, {"error": "not_found", "reason": "no queue 'q'"}),
        (QueueFull("full"), 507, {"error": "reject-publish", "reason": "full"}),
        (
            NotLeader("elsewhere", "n2"),
            503,
            {"error": "no_leader", "reason": "elsewhere", "leader": "n2", "leader_http": "http://n2:8080"},
        ),
        (NotLeader("nowhere"), 503, {"error": "no_leader", "reason": "nowhere"}),
        (
            ResourceAlarmed("n3", "disk"),
            503,
            {
                "error": "resource_alarm",
                "reason": "node n3 is in a disk alarm: publishes to its queues wait until it clears",
                "node": "n3",
                "resource": "disk",
            },
        ),
        (
            MembershipRefused("last_node", "the last one"),
            409,
            {"error": "last_node", "reason": "the last one"},
        ),
        (Unauthenticated("gone"), 401, {"error": "unauthorized", "reason": "gone"}),
        (Unauthenticated("not yet", status=503), 503, {"error": "not_ready", "reason": "not yet"}),
        (
            LoginThrottled("10.0.0.1", 7),
            429,
            {"error": "too_many_requests", "reason": "too many failed logins from 10.0.0.1; retry in 7 s"},
        ),
    ],
)
def test_each_failure_maps_to_its_status_and_error_body(
    app: web.Application, exc: Exception, status: int, body: dict[str, object]
) -> None:
    assert error_answer(app, exc, "a test") == (status, body)


def test_an_unexpected_failure_is_a_logged_500_naming_what_failed(
    app: web.Application, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="api.error_answers"):
        answer = error_answer(app, KeyError("boom"), "a streamed publish")
    assert answer == (
        500,
        {"error": "internal_error", "reason": "the node failed to serve a streamed publish"},
    )
    assert "serving a streamed publish" in caplog.text and "KeyError" in caplog.text


@pytest.mark.parametrize(
    ("exc", "status", "retry_after"),
    [
        (FormatsNotYetKnown("not known yet"), 503, "1"),
        (ResourceAlarmed("n3", "memory"), 503, "5"),
        (LoginThrottled("10.0.0.1", 7), 429, "7"),
        (QueueNotFound("no queue"), 404, None),
    ],
)
async def test_over_http_the_same_answer_comes_with_retry_after_when_the_error_says_when(
    app: web.Application, exc: Exception, status: int, retry_after: str | None
) -> None:
    async def fails(request: web.Request) -> web.StreamResponse:
        raise exc

    app.router.add_get("/fails", fails)
    async with TestClient(TestServer(app)) as client, client.get("/fails") as answer:
        assert answer.status == status
        assert await answer.json() == error_answer(app, exc, "GET /fails")[1]
        assert answer.headers.get("Retry-After") == retry_after


async def test_no_route_and_no_method_are_json_too(app: web.Application) -> None:
    async def ok(request: web.Request) -> web.StreamResponse:
        return web.json_response({})

    app.router.add_get("/here", ok)
    async with TestClient(TestServer(app)) as client:
        async with client.get("/nowhere") as answer:
            assert (answer.status, await answer.json()) == (
                404,
                {"error": "not_found", "reason": "Not Found"},
            )
        async with client.post("/here") as answer:
            assert answer.status == 405
            assert await answer.json() == {"error": "method_not_allowed", "reason": "Method Not Allowed"}
