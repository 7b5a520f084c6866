"""Every 4xx path of the HTTP API answers JSON `{"error", "reason"}` and changes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
import pytest

from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from queue_state.publishers import WINDOW_SIZE
from quorumq import Client, SeqTooOldError

MAX_MESSAGE_BYTES = 1024
MAX_REQUEST_BYTES = 64 * 1024
JSON_BODY = {"Content-Type": "application/json"}  # a body of any other type is 415 (decision 0020)


@pytest.fixture(scope="module")
def small_limits_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """One cluster for the module, with small size limits so 413s are cheap to provoke."""
    env = {
        "QUORUMQ_MAX_MESSAGE_BYTES": str(MAX_MESSAGE_BYTES),
        "QUORUMQ_MAX_REQUEST_BYTES": str(MAX_REQUEST_BYTES),
    }
    running = ProcessCluster.start(Path(tmp_path_factory.mktemp("api-errors")), env=env)
    yield running
    running.stop()


@pytest.fixture
async def http(small_limits_cluster: ProcessCluster) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as session:
        yield Api(session, small_limits_cluster.urls[1])


class Api:
    """Raw HTTP against one node (the server is under test, not the client)."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        async with self.session.request(method, self.base + path, **kwargs) as answer:
            if answer.content_type == "application/json":
                return answer.status, await answer.json()
            return answer.status, await answer.text()

    async def expect_error(self, status: int, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        got, body = await self.call(method, path, **kwargs)
        assert got == status, body
        assert isinstance(body, dict) and set(body) >= {"error", "reason"}, body
        assert "Traceback" not in body["reason"]
        return body

    async def declare(self, name: str, arguments: dict[str, Any] | None = None) -> None:
        status, body = await self.call("PUT", f"/api/queues/{name}", json={"arguments": arguments or {}})
        assert status in (201, 204), body

    async def messages(self, name: str) -> int:
        status, body = await self.call("GET", f"/api/queues/{name}")
        assert status == 200, body
        return body["messages"]


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        ("/api/queues/bad%20name", {}, "queue name"),
        ("/api/queues/q-args", {"arguments": [1]}, "arguments must be an object"),
        ("/api/queues/q-args", {"arguments": {}, "extra": 1}, "unknown fields"),
        ("/api/queues/q-args", {"arguments": {"x-no-such-thing": 1}}, "x-no-such-thing"),
        ("/api/queues/q-args", {"arguments": {"x-max-length": "ten"}}, "x-max-length"),
        ("/api/queues/q-args", {"arguments": {"x-max-length": True}}, "x-max-length"),
        ("/api/queues/q-args", {"arguments": {"x-overflow": "explode"}}, "x-overflow"),
        ("/api/queues/q-args", {"arguments": {"x-queue-type": "classic"}}, "x-queue-type"),
        (
            "/api/queues/q-args",
            {"arguments": {"x-dead-letter-queue": "dlq", "x-dead-letter-strategy": "at-least-once"}},
            "reject-publish",
        ),
    ],
)
async def test_declare_with_bad_input_is_400_naming_the_problem(
    http: Api, path: str, body: dict[str, Any], fragment: str
) -> None:
    error = await http.expect_error(400, "PUT", path, json=body)
    assert fragment in error["reason"]
    await http.expect_error(404, "GET", "/api/queues/q-args")


async def test_declare_body_that_is_not_json_is_400(http: Api) -> None:
    await http.expect_error(400, "PUT", "/api/queues/q-json", data=b"{not json", headers=JSON_BODY)
    await http.expect_error(400, "PUT", "/api/queues/q-json", json=[1, 2])


async def test_redeclare_with_other_arguments_is_409_and_same_arguments_204(http: Api) -> None:
    status, _ = await http.call("PUT", "/api/queues/redeclare", json={"arguments": {"x-max-length": 5}})
    assert status == 201
    status, _ = await http.call("PUT", "/api/queues/redeclare", json={"arguments": {"x-max-length": 5}})
    assert status == 204
    await http.expect_error(409, "PUT", "/api/queues/redeclare", json={"arguments": {"x-max-length": 6}})


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("GET", ""),
        ("DELETE", ""),
        ("DELETE", "/contents"),
        ("POST", "/messages"),
        ("POST", "/consumers"),
        ("POST", "/get"),
        ("POST", "/ack"),
    ],
)
async def test_unknown_queue_is_404(http: Api, method: str, suffix: str) -> None:
    body = {"messages": [{"body": "x"}], "ids": [1]} if method == "POST" else None
    await http.expect_error(404, method, f"/api/queues/nowhere{suffix}", json=body)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "messages is required"),
        ({"messages": []}, "messages must be a list of length >= 1"),
        ({"messages": ["x"]}, "messages[0] must be an object"),
        ({"messages": [{"body": 5}]}, "messages[0].body"),
        ({"messages": [{"body": "x", "encoding": "rot13"}]}, "encoding"),
        ({"messages": [{"body": "!!!", "encoding": "base64"}]}, "base64"),
        ({"messages": [{"body": "\ud800"}]}, "messages[0].body is not valid UTF-8"),
        ({"messages": [{"body": "x", "headers": [1]}]}, "headers"),
        ({"messages": [{"body": "x", "headers": {"h": "\ud800"}}]}, "headers must hold JSON values"),
        ({"messages": [{"body": "x", "headers": {"h": 10**30}}]}, "headers must hold JSON values"),
        ({"messages": [{"body": "x", "expiration": -1}]}, "expiration"),
        ({"messages": [{"body": "x", "colour": "red"}]}, "unknown fields"),
        ({"messages": [{"body": "x"}], "publisher": "p"}, "publisher and seq"),
        ({"messages": [{"body": "x"}], "publisher": "p", "seq": "one"}, "seq"),
        ({"messages": [{"body": "x"}], "publisher": "p", "seq": 2**64}, "seq must be an integer <="),
        ({"messages": [{"body": "x"}], "publisher": "\ud800", "seq": 1}, "publisher must be valid UTF-8"),
        ({"messages": [{"body": "x"}], "publisher": "", "seq": 0}, "publisher must be a non-empty string"),
        ({"messages": [{"body": "x"}], "priority": 3}, "unknown fields"),
    ],
)
async def test_publish_with_bad_input_is_400_and_enqueues_nothing(
    http: Api, body: dict[str, Any], fragment: str
) -> None:
    await http.declare("publish-errors")
    error = await http.expect_error(400, "POST", "/api/queues/publish-errors/messages", json=body)
    assert fragment in error["reason"]
    assert await http.messages("publish-errors") == 0


def packed(body: Any) -> bytes:
    return msgpack.packb(body)


@pytest.mark.parametrize(
    ("data", "status", "fragment"),
    [
        (b"\xc1", 400, "not valid msgpack"),
        (b"\x92\x01", 400, "not valid msgpack"),
        (b"\x81\xa8messages\x91\x81\xa4body\xa2\xff\xfe", 400, "not valid msgpack"),  # str not UTF-8
        (packed([1]), 400, "must be a msgpack map"),
        (packed({"messages": [{"body": 5}]}), 400, "messages[0].body"),
        (packed({"messages": [{"body": msgpack.ExtType(1, b"x")}]}), 400, "messages[0].body"),
        (packed({"messages": [{"body": b"x", "encoding": "utf8"}]}), 400, "binary body must be base64"),
        (packed({"messages": [{"body": b"x", "headers": {"h": b"raw"}}]}), 400, "JSON values"),
        (packed({"messages": [{"body": b"x", "headers": {b"k": 1}}]}), 400, "headers must have string keys"),
        (packed({"messages": [{"body": b"x", b"colour": 1}]}), 400, "messages[0] must have string keys"),
        (packed({"messages": [{"body": b"x"}], b"priority": 1, "extra": 2}), 400, "unknown fields"),
        (packed({"messages": [{"body": b"x"}], "publisher": "p", "seq": 2**64 - 1}), 400, "seq"),
        (packed({"messages": [{"body": b"x", "expiration": -1}]}), 400, "expiration"),
        (packed({"messages": [{"body": b"x" * (MAX_MESSAGE_BYTES + 1)}]}), 413, str(MAX_MESSAGE_BYTES)),
        (packed({"messages": [{"body": b"x" * 1000}] * 70}), 413, str(MAX_REQUEST_BYTES)),
    ],
)
async def test_bad_msgpack_publish_is_a_json_4xx_and_enqueues_nothing(
    http: Api, data: bytes, status: int, fragment: str
) -> None:
    await http.declare("msgpack-errors")
    path, headers = "/api/queues/msgpack-errors/messages", {"Content-Type": "application/msgpack"}
    error = await http.expect_error(status, "POST", path, data=data, headers=headers)
    assert fragment in error["reason"]
    assert await http.messages("msgpack-errors") == 0


async def test_oversized_message_is_413(http: Api) -> None:
    await http.declare("big")
    body = {"messages": [{"body": "x" * (MAX_MESSAGE_BYTES + 1)}]}
    error = await http.expect_error(413, "POST", "/api/queues/big/messages", json=body)
    assert str(MAX_MESSAGE_BYTES) in error["reason"]
    assert await http.messages("big") == 0


async def test_oversized_request_body_is_413(http: Api) -> None:
    await http.declare("huge")
    body = {"messages": [{"body": "x"}] * 10000}
    await http.expect_error(413, "POST", "/api/queues/huge/messages", json=body)
    assert await http.messages("huge") == 0


async def test_publish_to_a_full_reject_publish_queue_is_507(http: Api) -> None:
    await http.declare("full", {"x-max-length": 2, "x-overflow": "reject-publish"})
    status, _ = await http.call("POST", "/api/queues/full/messages", json={"messages": [{"body": "a"}] * 2})
    assert status == 201
    error = await http.expect_error(
        507, "POST", "/api/queues/full/messages", json={"messages": [{"body": "c"}]}
    )
    assert error["error"] == "reject-publish"
    assert await http.messages("full") == 2


async def test_rule_a_seq_below_the_dedup_window_is_409_seq_too_old_and_the_client_raises(
    http: Api,
) -> None:
    """A seq the queue cannot vouch for is refused, never confirmed (issue 17, finding 3)."""
    await http.declare("late-seq")
    path = "/api/queues/late-seq/messages"

    def request(seq: int) -> dict[str, Any]:
        return {"json": {"messages": [{"body": str(seq)}], "publisher": "p", "seq": seq}}

    assert (await http.call("POST", path, **request(1)))[0] == 201
    later = range(3, WINDOW_SIZE + 4)  # seq 2 is held back while more than a window of later seqs commit
    answers = await asyncio.gather(*(http.call("POST", path, **request(seq)) for seq in later))
    assert {status for status, _ in answers} == {201}
    error = await http.expect_error(409, "POST", path, **request(2))
    assert error["error"] == "seq_too_old"
    async with Client([http.base]) as client:
        with pytest.raises(SeqTooOldError):
            await client.publish("late-seq", ["2"], publisher="p", seq=2)
    assert await http.call("POST", path, **request(1)) == (201, {"ids": [], "duplicate": True})
    assert await http.messages("late-seq") == 1 + len(later)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"prefetch": 0}, "prefetch"),
        ({"prefetch": True}, "prefetch"),
        ({"prefetch": 1, "priority": "high"}, "priority"),
        ({"prefetch": 1, "colour": "red"}, "unknown fields"),
        ({"timeout": 0}, "timeout"),
        ({"durable": True, "name": "\ud800"}, "name must be valid UTF-8"),
    ],
)
async def test_register_consumer_with_bad_input_is_400(
    http: Api, body: dict[str, Any], fragment: str
) -> None:
    await http.declare("consumer-errors")
    error = await http.expect_error(400, "POST", "/api/queues/consumer-errors/consumers", json=body)
    assert fragment in error["reason"]


async def test_consumer_endpoints_with_unknown_consumer_are_404(http: Api) -> None:
    await http.declare("no-consumer")
    base = "/api/queues/no-consumer/consumers/ghost"
    await http.expect_error(404, "GET", base + "/deliveries")
    await http.expect_error(404, "POST", base + "/ack", json={"ids": [1]})
    await http.expect_error(404, "POST", base + "/nack", json={"ids": [1]})
    await http.expect_error(404, "POST", base + "/touch", json={"ids": [1]})
    await http.expect_error(404, "DELETE", base)


async def test_settle_and_poll_with_bad_input_are_400(http: Api) -> None:
    await http.declare("settle-errors")
    status, body = await http.call("POST", "/api/queues/settle-errors/consumers", json={"prefetch": 1})
    assert status == 201
    base = f"/api/queues/settle-errors/consumers/{body['consumer']}"
    await http.expect_error(400, "POST", base + "/ack", json={})
    await http.expect_error(400, "POST", base + "/ack", json={"ids": ["one"]})
    await http.expect_error(400, "POST", base + "/ack", json={"ids": [True]})
    await http.expect_error(400, "POST", base + "/nack", json={"ids": [1], "requeue": "yes"})
    await http.expect_error(400, "POST", base + "/nack", json={"ids": [1], "delay": -1})
    error = await http.expect_error(
        400, "POST", base + "/nack", json={"ids": [1], "requeue": False, "delay": 5}
    )
    assert "delay goes with a nack that requeues" in error["reason"]
    await http.expect_error(400, "POST", base + "/touch", json={"ids": [1], "delay": 5})
    await http.expect_error(400, "POST", base + "/touch", json={})
    await http.expect_error(400, "POST", base + "/ack", data=b"[", headers=JSON_BODY)
    await http.expect_error(400, "GET", base + "/deliveries?max=lots")
    await http.expect_error(400, "GET", base + "/deliveries?wait=3600")


async def test_get_with_bad_input_is_400(http: Api) -> None:
    await http.declare("get-errors")
    await http.expect_error(400, "POST", "/api/queues/get-errors/get", json={"count": 0})
    await http.expect_error(400, "POST", "/api/queues/get-errors/get", json={"ack": "sometimes"})


async def test_guarded_delete_is_409_when_not_empty_or_in_use(http: Api) -> None:
    await http.declare("guarded")
    status, _ = await http.call("POST", "/api/queues/guarded/messages", json={"messages": [{"body": "a"}]})
    assert status == 201
    await http.expect_error(409, "DELETE", "/api/queues/guarded?if_empty=true")
    await http.expect_error(400, "DELETE", "/api/queues/guarded?if_empty=maybe")
    assert await http.messages("guarded") == 1


async def test_unknown_route_and_wrong_method_are_json(http: Api) -> None:
    await http.expect_error(404, "GET", "/api/nothing-here")
    await http.expect_error(405, "POST", "/api/queues/x")


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/api/tokens", {"ttl_s": None}, 201),
        ("/api/queues/nulls/get", {"count": None}, 200),
        ("/api/queues/nulls/consumers", {"prefetch": None, "priority": None, "timeout": None}, 201),
    ],
)
async def test_a_null_optional_number_is_its_default(http: Api, path: str, body: dict, status: int) -> None:
    await http.declare("nulls")  # found by the API fuzz: `{"ttl_s": null}` was a 500
    got, answer = await http.call("POST", path, json=body)
    assert got == status, answer


async def test_a_delay_of_nothing_is_no_delay_and_bad_delays_are_400(http: Api) -> None:
    await http.declare("no-delay")
    past = {"messages": [{"body": "a", "delay": 0}, {"body": "b", "not_before": "2001-01-01T00:00:00Z"}]}
    status, _ = await http.call("POST", "/api/queues/no-delay/messages", json=past)
    assert status == 201
    assert await http.messages("no-delay") == 2
    for message, fragment in [
        ({"body": "x", "delay": -1}, "messages[0].delay must be an integer >= 0"),
        ({"body": "x", "delay": 1, "not_before": 5}, "both delay and not_before"),
        ({"body": "x", "not_before": "soon"}, "not_before must be epoch milliseconds"),
    ]:
        error = await http.expect_error(
            400, "POST", "/api/queues/no-delay/messages", json={"messages": [message]}
        )
        assert fragment in error["reason"]
    assert await http.messages("no-delay") == 2


async def test_bad_priorities_are_400_and_a_priority_of_0_is_none(http: Api) -> None:
    await http.declare("prio-errors")
    status, _ = await http.call(
        "POST", "/api/queues/prio-errors/messages", json={"messages": [{"body": "a", "priority": 0}]}
    )
    assert status == 201
    for priority in (-1, 256, "high", True, False, 1.5):
        error = await http.expect_error(
            400,
            "POST",
            "/api/queues/prio-errors/messages",
            json={"messages": [{"body": "x", "priority": priority}]},
        )
        assert "messages[0].priority must be an integer" in error["reason"]
    error = await http.expect_error(
        400, "PUT", "/api/queues/prio-bad-max", json={"arguments": {"x-max-priority": 32}}
    )
    assert "x-max-priority" in error["reason"]
    assert await http.messages("prio-errors") == 1
