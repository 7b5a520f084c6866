"""Confirmed publishing: retries reuse publisher and seq; the pipelined Publisher bounds its window."""

import asyncio
from typing import Any

import pytest
from aiohttp import web
from client_fakes import error, published, serve

from quorumq import (
    Client,
    ConflictError,
    OverloadedError,
    ProtocolError,
    QuorumqError,
    RejectedPublishError,
    SeqTooOldError,
)


class DedupQueue:
    """A fake publish endpoint that assigns ids and answers a repeated (publisher, seq) with the same ids."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, int]] = []
        self.confirmed: dict[tuple[str, int], list[int]] = {}
        self.next_id = 0
        self.bodies: dict[int, str] = {}

    def confirm(self, body: dict[str, Any]) -> web.Response:
        key = (body["publisher"], body["seq"])
        if key not in self.confirmed:
            count = len(body["messages"])
            self.confirmed[key] = list(range(self.next_id, self.next_id + count))
            self.next_id += count
            self.bodies.update(zip(self.confirmed[key], (m["body"] for m in body["messages"]), strict=True))
        return web.json_response({"ids": self.confirmed[key]}, status=201)

    def app(self, first_answers: list[str]) -> web.Application:
        """Answer publishes; the first ones instead do what `first_answers` says ('503' or 'drop')."""

        async def publish(request: web.Request) -> web.Response:
            body = await published(request)
            self.requests.append((body["publisher"], body["seq"]))
            if first_answers:
                if first_answers.pop(0) == "drop":
                    assert request.transport is not None
                    request.transport.close()
                    return web.Response()
                return error(503, "no_leader", "election running")
            return self.confirm(body)

        app = web.Application()
        app.router.add_post("/api/queues/{q}/messages", publish)
        return app


@pytest.mark.parametrize("failure", ["503", "drop"])
async def test_retried_publish_keeps_publisher_and_seq(failure: str) -> None:
    queue = DedupQueue()
    async with serve(queue.app([failure, failure])) as node, Client([node]) as client:
        assert await client.publish("q", [b"a", b"b"]) == [0, 1]
    assert len(queue.requests) == 3
    assert set(queue.requests) == {(client.publisher_id, 1)}


async def test_publish_retry_after_dropped_connection_moves_to_next_node_with_same_seq() -> None:
    queue = DedupQueue()
    async with (
        serve(queue.app(["drop"])) as first,
        serve(queue.app([])) as second,
        Client([first, second]) as client,
    ):
        assert await client.publish("q", "x") == [0]
    assert queue.requests == [(client.publisher_id, 1), (client.publisher_id, 1)]


async def test_each_publish_request_takes_the_next_seq() -> None:
    queue = DedupQueue()
    async with serve(queue.app([])) as node, Client([node]) as client:
        await client.publish("q", "a")
        await client.publish("q", "b")
        await client.publish("q", "c", publisher="spark-query-1", seq=42)
    assert queue.requests == [(client.publisher_id, 1), (client.publisher_id, 2), ("spark-query-1", 42)]


async def test_publisher_keeps_at_most_window_requests_in_flight_and_confirms_every_message() -> None:
    window, batch, total = 4, 10, 200
    in_flight = 0
    most_in_flight = 0
    batch_sizes: list[int] = []
    window_filled = asyncio.Event()
    queue = DedupQueue()

    async def publish(request: web.Request) -> web.Response:
        nonlocal in_flight, most_in_flight
        body = await published(request)
        batch_sizes.append(len(body["messages"]))
        in_flight += 1
        most_in_flight = max(most_in_flight, in_flight)
        if in_flight == window:
            # Hold the full window a moment: a publisher ignoring its window would send more meanwhile.
            await asyncio.sleep(0.1)
            window_filled.set()
        await window_filled.wait()
        in_flight -= 1
        return queue.confirm(body)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    async with (
        serve(app) as node,
        Client([node]) as client,
        client.publisher("q", window=window, batch=batch) as pub,
    ):
        confirms = [await pub.send(f"m{i}") for i in range(total)]
    assert most_in_flight == window
    assert batch_sizes == [batch] * (total // batch)
    assert sorted(confirm.result() for confirm in confirms) == list(range(total))


async def test_publisher_fails_the_confirms_of_a_rejected_batch_and_flush_raises() -> None:
    async def full(request: web.Request) -> web.Response:
        return error(507, "reject-publish", "queue is full")

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", full)
    async with serve(app) as node, Client([node]) as client:
        await assert_publisher_confirm_and_flush_fail_with(client, RejectedPublishError)


async def assert_publisher_confirm_and_flush_fail_with(client: Client, expected: type[QuorumqError]) -> None:
    pub = client.publisher("q")
    confirm = await pub.send(b"x")
    with pytest.raises(expected):
        await confirm
    with pytest.raises(expected):
        await pub.flush()
    await pub.close()


async def test_rule_seq_too_old_raises_at_once_and_fails_the_publishers_confirms() -> None:
    """A seq the queue cannot vouch for is refused, never confirmed (issue 17, finding 3)."""
    requests = 0

    async def too_old(request: web.Request) -> web.Response:
        nonlocal requests
        requests += 1
        return error(409, "seq_too_old", "seq 1 is below this publisher's dedup window")

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", too_old)
    async with serve(app) as node, Client([node]) as client:
        with pytest.raises(SeqTooOldError) as raised:
            await client.publish("q", [b"x"], publisher="p", seq=1)
        assert isinstance(raised.value, ConflictError)
        assert (raised.value.status, raised.value.code) == (409, "seq_too_old")
        assert "dedup window" in raised.value.reason
        assert requests == 1  # never retried: the same seq can only be refused again
        await assert_publisher_confirm_and_flush_fail_with(client, SeqTooOldError)


async def test_a_duplicate_whose_ids_are_forgotten_is_an_ids_forgotten_error_not_ids() -> None:
    async def forgotten(request: web.Request) -> web.Response:
        return web.json_response({"ids": [], "duplicate": True}, status=201)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", forgotten)
    async with serve(app) as node, Client([node]) as client:
        with pytest.raises(QuorumqError) as raised:
            await client.publish("q", [b"x", b"y"], publisher="p", seq=7)
    assert (raised.value.status, raised.value.code) == (201, "ids_forgotten")
    assert "seq 7 of publisher p was enqueued" in raised.value.reason


async def test_a_confirm_with_fewer_ids_than_messages_is_a_protocol_error_carrying_its_status() -> None:
    async def short(request: web.Request) -> web.Response:
        return web.json_response({"ids": [4]}, status=201)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", short)
    async with serve(app) as node, Client([node]) as client:
        with pytest.raises(ProtocolError) as raised:
            await client.publish("q", [b"x", b"y"])
    assert (raised.value.status, raised.value.code) == (201, "short_ids")


async def test_publish_all_returns_ids_in_message_order() -> None:
    queue = DedupQueue()
    messages = [f"m{i}" for i in range(25)]
    told: list[int] = []
    async with serve(queue.app([])) as node, Client([node]) as client:
        ids = await client.publish_all("q", iter(messages), window=3, batch=4, sent=told.append)
    assert [queue.bodies[message_id] for message_id in ids] == messages
    assert len(queue.requests) == 7
    assert told == [4] * 6 + [1]  # each batch handed over, then the last message


async def test_publisher_left_by_an_exception_cancels_unconfirmed_messages() -> None:
    never = asyncio.Event()
    arrived = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        arrived.set()
        await never.wait()
        return web.json_response({"ids": []}, status=201)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", hang)
    confirms = []
    async with serve(app) as node, Client([node]) as client:
        with pytest.raises(KeyError):
            async with client.publisher("q", window=1, batch=1) as pub:
                confirms = [await pub.send("a"), await pub.send("b")]
                await arrived.wait()
                raise KeyError("stop")
    assert [confirm.cancelled() for confirm in confirms] == [True, True]


def _overloaded(retry_after: str) -> web.Response:
    answer = error(
        503, "overloaded", "queue 'q' has as many publishes waiting as its leader takes", queue="q"
    )
    answer.headers["Retry-After"] = retry_after
    return answer


async def test_an_overloaded_publish_is_sent_again_with_its_seq_no_sooner_than_its_retry_after() -> None:
    """503 `overloaded` enqueued nothing: the client waits what the node's Retry-After says (0.3 s here;
    a node says whole seconds), then sends the same publisher and seq again."""
    queue = DedupQueue()
    loop = asyncio.get_running_loop()
    sent_at: list[float] = []

    async def publish(request: web.Request) -> web.Response:
        body = await published(request)
        sent_at.append(loop.time())
        queue.requests.append((body["publisher"], body["seq"]))
        return _overloaded("0.3") if len(sent_at) == 1 else queue.confirm(body)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    async with serve(app) as node, Client([node]) as client:
        assert await client.publish("q", [b"a"]) == [0]
    assert queue.requests == [(client.publisher_id, 1)] * 2
    assert sent_at[1] - sent_at[0] >= 0.3


async def test_an_overloaded_publish_whose_retry_after_is_past_the_deadline_raises_at_once() -> None:
    attempts = 0

    async def publish(request: web.Request) -> web.Response:
        nonlocal attempts
        attempts += 1
        return _overloaded("5")

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    async with serve(app) as node, Client([node], timeout=1.0) as client:
        with pytest.raises(OverloadedError) as raised:
            await client.publish("q", [b"a"])
    assert attempts == 1 and raised.value.retry_after_s == 5.0


async def test_a_publish_asks_the_node_to_wait_for_room_and_waits_as_long_for_its_answer() -> None:
    """`wait_ms` goes in the body as `wait`; the request's deadline grows by it, so a node that answers
    after waiting that long (less than the wait, more than the timeout here) is still heard."""
    queue = DedupQueue()
    waits: list[object] = []

    async def publish(request: web.Request) -> web.Response:
        body = await published(request)
        waits.append(body.get("wait"))
        if body.get("wait"):
            await asyncio.sleep(0.6)  # the node waiting for room: longer than the client's timeout
        return queue.confirm(body)

    app = web.Application()
    app.router.add_post("/api/queues/{q}/messages", publish)
    async with serve(app) as node, Client([node], timeout=0.5) as client:
        assert await client.publish("q", [b"a"], wait_ms=2000) == [0]
        assert await client.publish("q", [b"b"]) == [1]
        async with client.publisher("q", wait_ms=1500) as pub:
            await pub.send(b"c")
    assert waits == [2000, None, 1500]
