"""The client finds a working node: connection failover, leader hints, 503 backoff within the deadline."""

import asyncio

import pytest
from aiohttp import web
from client_fakes import error, refused_node, serve

from quorumq import Client, NoNodeAvailableError, TransportError, UnavailableError


def nodes_app(name: str, hits: list[str] | None = None) -> web.Application:
    """A node answering GET /api/nodes with itself, noting each request in `hits`."""

    async def nodes(request: web.Request) -> web.Response:
        if hits is not None:
            hits.append(name)
        return web.json_response([{"name": name}])

    app = web.Application()
    app.router.add_get("/api/nodes", nodes)
    return app


async def test_request_fails_over_to_next_node_when_first_refuses_connections() -> None:
    hits: list[str] = []
    async with serve(nodes_app("n2", hits)) as good, Client([refused_node(), good]) as client:
        assert await client.nodes() == [{"name": "n2"}]
        assert await client.nodes() == [{"name": "n2"}]
    assert hits == ["n2", "n2"]


async def test_host_port_nodes_are_accepted_without_scheme() -> None:
    async with serve(nodes_app("n1")) as good, Client([good.removeprefix("http://")]) as client:
        assert await client.nodes() == [{"name": "n1"}]


async def test_no_node_available_lists_every_node_tried() -> None:
    nodes = [refused_node(), refused_node()]
    async with Client(nodes) as client:
        with pytest.raises(NoNodeAvailableError) as raised:
            await client.nodes()
    assert raised.value.nodes == nodes
    assert all(node in str(raised.value) for node in nodes)


async def test_503_leader_hint_is_followed_to_the_named_node() -> None:
    follower_hits: list[str] = []
    async with serve(nodes_app("leader")) as leader:

        async def not_leader(request: web.Request) -> web.Response:
            follower_hits.append(request.path)
            return error(503, "not_leader", "ask the leader", leader="n2", leader_http=leader)

        follower = web.Application()
        follower.router.add_get("/api/nodes", not_leader)
        async with serve(follower) as follower_url, Client([follower_url]) as client:
            assert await client.nodes() == [{"name": "leader"}]
    assert follower_hits == ["/api/nodes"]


async def test_503_without_hint_is_retried_until_a_leader_is_elected() -> None:
    answers = [error(503, "no_leader", "election"), error(503, "no_leader", "election")]

    async def nodes(request: web.Request) -> web.Response:
        return answers.pop(0) if answers else web.json_response([{"name": "n1"}])

    app = web.Application()
    app.router.add_get("/api/nodes", nodes)
    async with serve(app) as node, Client([node]) as client:
        assert await client.nodes() == [{"name": "n1"}]
    assert answers == []


async def test_503_retries_stop_at_the_request_deadline() -> None:
    async def nodes(request: web.Request) -> web.Response:
        return error(503, "no_quorum", "2 of 3 replicas down")

    app = web.Application()
    app.router.add_get("/api/nodes", nodes)
    loop = asyncio.get_running_loop()
    async with serve(app) as node, Client([node], timeout=0.3) as client:
        started = loop.time()
        with pytest.raises(UnavailableError) as raised:
            await client.nodes()
    assert raised.value.code == "no_quorum"
    assert loop.time() - started < 1.5


async def test_settle_is_not_resent_after_the_connection_drops_mid_request() -> None:
    hits: list[str] = []

    async def drop(request: web.Request) -> web.Response:
        hits.append(request.path)
        assert request.transport is not None
        request.transport.close()
        return web.Response()

    app = web.Application()
    app.router.add_post("/api/queues/{q}/consumers/{tag}/ack", drop)
    async with serve(app) as node, Client([node]) as client:
        with pytest.raises(TransportError):
            await client.ack("q", "c1", [1])
    assert hits == ["/api/queues/q/consumers/c1/ack"]


async def test_queue_names_are_percent_encoded_in_paths() -> None:
    seen: list[str] = []

    async def stats(request: web.Request) -> web.Response:
        seen.append(request.match_info["q"])
        return web.json_response({"name": request.match_info["q"]})

    app = web.Application()
    app.router.add_get("/api/queues/{q}", stats)
    async with serve(app) as node, Client([node]) as client:
        assert await client.queue("a b/c?") == {"name": "a b/c?"}
    assert seen == ["a b/c?"]


async def test_health_report_is_returned_even_when_the_node_is_not_ready() -> None:
    async def health(request: web.Request) -> web.Response:
        return web.json_response({"node": "n1", "status": "no_quorum"}, status=503)

    app = web.Application()
    app.router.add_get("/api/health", health)
    async with serve(app) as node, Client([node], timeout=5) as client:
        assert await client.health() == {"node": "n1", "status": "no_quorum"}
