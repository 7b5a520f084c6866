"""Failover within one request's deadline: a node that stops answering, or answers 503 without a leader
hint, is left for the next node; a slow node that is alive is waited for (docs/decisions/0012)."""

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from client_fakes import error, published, serve
from support.eventually import eventually
from test_client_publishing import DedupQueue

from quorumq import Client, OutcomeUnknownError, UnavailableError


@contextlib.asynccontextmanager
async def stopped_node() -> AsyncIterator[str]:
    """The base URL of a real HTTP server process frozen with SIGSTOP: the kernel still accepts its
    connections, nothing ever answers (a paused node, as the `pause` nemesis makes)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        async def listening() -> bool:
            assert server.poll() is None, "the HTTP server process exited"
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            await writer.wait_closed()
            return True

        await eventually(listening, "the HTTP server process to listen", timeout=20, interval=0.05)
        server.send_signal(signal.SIGSTOP)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGCONT)
        server.kill()
        server.wait()


async def test_client_fails_over_from_a_stopped_node_within_its_deadline() -> None:
    queue = DedupQueue()
    async with (
        stopped_node() as frozen,
        serve(queue.app([])) as alive,
        Client([frozen, alive], timeout=30.0, unresponsive_after=0.2) as client,
    ):
        assert await client.publish("q", "x") == [0]
        assert client.node_urls[0] == frozen
    assert queue.requests == [(client.publisher_id, 1)]


async def test_a_slow_node_that_answers_its_health_check_is_waited_for() -> None:
    other = DedupQueue()
    health_checks = asyncio.Condition()
    checked = 0

    async def health(request: web.Request) -> web.Response:
        nonlocal checked
        async with health_checks:
            checked += 1
            health_checks.notify_all()
        return web.json_response({"status": "ok"})

    async def slow_publish(request: web.Request) -> web.Response:
        body = await published(request)
        async with health_checks:  # answer only once the client has checked on this node twice
            await health_checks.wait_for(lambda: checked >= 2)
        return web.json_response({"ids": [7] * len(body["messages"])}, status=201)

    slow = web.Application()
    slow.router.add_get("/api/health", health)
    slow.router.add_post("/api/queues/{q}/messages", slow_publish)
    async with (
        serve(slow) as slow_url,
        serve(other.app([])) as other_url,
        # a health check must answer within unresponsive_after; 1 s leaves room for a loaded machine
        Client([slow_url, other_url], timeout=30.0, unresponsive_after=1.0) as client,
    ):
        assert await client.publish("q", "x") == [7]
    assert other.requests == []


async def test_503_without_a_leader_hint_moves_on_to_the_next_node() -> None:
    queue = DedupQueue()
    refusals: list[str] = []

    async def no_leader(request: web.Request) -> web.Response:
        refusals.append(request.path)
        return error(503, "not_leader", "no reachable leader for this request yet")

    isolated = web.Application()
    isolated.router.add_post("/api/queues/{q}/messages", no_leader)
    async with (
        serve(isolated) as isolated_url,
        serve(queue.app([])) as alive,
        Client([isolated_url, alive], timeout=30.0) as client,
    ):
        assert await client.publish("q", "x") == [0]
    assert refusals == ["/api/queues/q/messages"]
    assert queue.requests == [(client.publisher_id, 1)]


async def test_an_outcome_unknown_503_is_retried_only_for_a_request_safe_to_resend() -> None:
    """A 503 `outcome_unknown` (the node sent the request on and lost track of it) may have taken effect:
    a purge is not sent again, a read is; any other 503 is retried for both."""
    purges: list[str] = []
    reads: list[str] = []

    async def purge(request: web.Request) -> web.Response:
        purges.append(request.match_info["q"])
        return error(503, "outcome_unknown", "the leader stopped answering after the request was sent")

    async def stats(request: web.Request) -> web.Response:
        reads.append(request.match_info["q"])
        if len(reads) == 1:
            return error(503, "outcome_unknown", "the leader stopped answering after the request was sent")
        return web.json_response({"name": request.match_info["q"], "messages": 0})

    app = web.Application()
    app.router.add_delete("/api/queues/{q}/contents", purge)
    app.router.add_get("/api/queues/{q}", stats)
    async with serve(app) as url, Client([url], timeout=5.0) as client:
        with pytest.raises(OutcomeUnknownError) as raised:
            await client.purge("unknown")
        assert (raised.value.status, raised.value.code) == (503, "outcome_unknown")
        assert isinstance(raised.value, UnavailableError)
        assert purges == ["unknown"]  # sent once, never again
        assert (await client.queue("q"))["name"] == "q"
        assert reads == ["q", "q"]


async def test_a_publish_that_may_have_taken_effect_stays_unknown_when_later_attempts_are_held_back() -> None:
    """Review of the resource alarms: a retry refused with `resource_alarm` says nothing of the attempt
    before it, which the leader may have committed; at the deadline the publish is unknown, not held
    back (a caller would publish it again under a new seq, and enqueue it twice)."""
    attempts: list[str] = []

    async def publish(request: web.Request) -> web.Response:
        attempts.append(request.match_info["q"])
        if len(attempts) == 1:
            return error(503, "outcome_unknown", "the leader stopped answering after the request was sent")
        return error(503, "resource_alarm", "node n3 is in a disk alarm: publishes to its queues wait")

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    async with serve(app) as url, Client([url], timeout=2.5) as client:
        with pytest.raises(OutcomeUnknownError):
            await client.publish("q", "x")
    assert len(attempts) > 1
