"""Non-2xx answers become QuorumqError subclasses carrying the server's code and reason."""

import pytest
from aiohttp import web
from client_fakes import error, serve

from quorumq import (
    BadRequestError,
    Client,
    ConflictError,
    NotFoundError,
    PayloadTooLargeError,
    QuorumqError,
    RejectedPublishError,
)
from quorumq.errors import OverloadedError, error_from_response


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, BadRequestError),
        (404, NotFoundError),
        (409, ConflictError),
        (413, PayloadTooLargeError),
        (507, RejectedPublishError),
    ],
)
async def test_error_status_maps_to_its_exception(status: int, expected: type[QuorumqError]) -> None:
    async def publish(request: web.Request) -> web.Response:
        return error(status, "some_code", "the server's reason")

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    async with serve(app) as node, Client([node]) as client:
        with pytest.raises(expected) as raised:
            await client.publish("q", [b"x"])
    assert (raised.value.status, raised.value.code, raised.value.reason) == (
        status,
        "some_code",
        "the server's reason",
    )


async def test_non_json_error_becomes_a_generic_quorumq_error() -> None:
    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=500, text="Internal Server Error")

    app = web.Application()
    app.router.add_get("/api/nodes", broken)
    async with serve(app) as node, Client([node]) as client:
        with pytest.raises(QuorumqError) as raised:
            await client.nodes()
    assert type(raised.value) is QuorumqError
    assert (raised.value.status, raised.value.code) == (500, "http_500")
    assert "Internal Server Error" in raised.value.reason


async def test_declare_reports_created_then_existing_and_conflict() -> None:
    declared: dict[str, dict] = {}

    async def declare(request: web.Request) -> web.Response:
        name, arguments = request.match_info["q"], (await request.json())["arguments"]
        if name not in declared:
            declared[name] = arguments
            return web.json_response({}, status=201)
        if declared[name] == arguments:
            return web.Response(status=204)
        return error(409, "precondition_failed", "different arguments")

    app = web.Application()
    app.router.add_put("/api/queues/{q}", declare)
    async with serve(app) as node, Client([node]) as client:
        assert await client.declare("q", {"x-max-length": 10}) is True
        assert await client.declare("q", {"x-max-length": 10}) is False
        with pytest.raises(ConflictError):
            await client.declare("q", {"x-max-length": 11})


@pytest.mark.parametrize("retry_after", [1, "1", "2.5"])
def test_a_retry_after_is_read_as_seconds(
    retry_after: object,
) -> None:
    error = error_from_response(503, {"error": "overloaded", "reason": "r", "retry_after": retry_after})
    assert isinstance(error, OverloadedError) and error.retry_after_s == float(str(retry_after))


@pytest.mark.parametrize("retry_after", [None, "soon", -1, "inf"])
def test_a_missing_or_unreadable_retry_after_is_none(retry_after: object) -> None:
    error = error_from_response(503, {"error": "overloaded", "reason": "r", "retry_after": retry_after})
    assert error.retry_after_s is None
