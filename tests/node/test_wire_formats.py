"""The msgpack extension next to the JSON contract on a real cluster: either format in, either format out.

Requests go to a node that is not the queue's leader, so the forwarding hop carries the formats too.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
import pytest

from cli.node_processes import HARNESS_HEADERS, ProcessCluster
from quorumq import Client

MSGPACK = "application/msgpack"


@pytest.fixture(scope="module")
def wire_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    running = ProcessCluster.start(Path(tmp_path_factory.mktemp("wire-formats")))
    yield running
    running.stop()


class Raw:
    """Raw HTTP (the server is under test, not the client) against a node that does not lead `queue`."""

    def __init__(self, session: aiohttp.ClientSession, cluster: ProcessCluster) -> None:
        self.session = session
        self.cluster = cluster
        self.base = ""

    async def declare(self, queue: str) -> None:
        async with Client(self.cluster.urls) as client:
            await client.declare(queue)
            leader = (await client.queue(queue))["leader"]
        self.base = next(node.url for node in self.cluster.nodes if node.name != leader)

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, str, Any]:
        async with self.session.request(method, self.base + path, **kwargs) as answer:
            data = await answer.read()
            if answer.content_type == MSGPACK:
                return answer.status, answer.content_type, msgpack.unpackb(data)
            return answer.status, answer.content_type, await answer.json()

    async def publish_msgpack(self, queue: str, body: Any) -> tuple[int, str, Any]:
        path, headers = f"/api/queues/{queue}/messages", {"Content-Type": MSGPACK}
        return await self.call("POST", path, data=msgpack.packb(body), headers=headers)

    async def poll(self, queue: str, accept: str) -> list[dict[str, Any]]:
        status, _, tag = await self.call("POST", f"/api/queues/{queue}/consumers", json={"prefetch": 10})
        assert status == 201, tag
        path = f"/api/queues/{queue}/consumers/{tag['consumer']}/deliveries?max=10&wait=5"
        status, content_type, rows = await self.call("GET", path, headers={"Accept": accept})
        assert (status, content_type) == (200, accept), rows
        return rows


@pytest.fixture
async def raw(wire_cluster: ProcessCluster) -> AsyncIterator[Raw]:
    async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as session:
        yield Raw(session, wire_cluster)


async def test_msgpack_publish_is_read_as_json_binary_as_base64_and_text_as_text(raw: Raw) -> None:
    await raw.declare("mp-in")
    messages = [{"body": b"\x00\xff"}, {"body": "héllo", "headers": {"k": [1, "v"]}, "expiration": 60000}]
    status, content_type, answer = await raw.publish_msgpack("mp-in", {"messages": messages})
    assert (status, content_type, answer["ids"]) == (201, "application/json", [1, 2])
    rows = await raw.poll("mp-in", "application/json")
    assert [(r["body"], r["encoding"], r["headers"]) for r in rows] == [
        ("AP8=", "base64", {}),
        ("héllo", "utf8", {"k": [1, "v"]}),
    ]


async def test_json_publish_is_read_as_msgpack_with_raw_bodies(raw: Raw) -> None:
    await raw.declare("json-in")
    binary = base64.b64encode(b"\x00\xff").decode()
    messages = [{"body": binary, "encoding": "base64"}, {"body": "héllo", "headers": {"h": 1}}]
    status, _, _ = await raw.call("POST", "/api/queues/json-in/messages", json={"messages": messages})
    assert status == 201
    rows = await raw.poll("json-in", MSGPACK)
    assert [(r["id"], r["body"], r["encoding"], r["headers"]) for r in rows] == [
        (1, b"\x00\xff", "base64", {}),
        (2, "héllo".encode(), "utf8", {"h": 1}),
    ]
    assert {"delivery_count", "redelivered", "published_at"} <= set(rows[0])


async def test_get_and_the_durable_log_answer_msgpack_when_asked(raw: Raw) -> None:
    await raw.declare("mp-get")
    await raw.publish_msgpack("mp-get", {"messages": [{"body": b"a"}, {"body": b"b"}, {"body": "c"}]})
    accept, queue = {"Accept": MSGPACK}, "/api/queues/mp-get"
    _, content_type, got = await raw.call("POST", queue + "/get", json={"ack": "auto"}, headers=accept)
    assert (content_type, [row["body"] for row in got]) == (MSGPACK, [b"a"])
    await raw.call("POST", queue + "/consumers", json={"durable": True, "name": "job"})
    await raw.call("POST", queue + "/consumers/job/checkout", json={"max": 2})
    _, content_type, log = await raw.call("GET", queue + "/consumers/job/log?from=0&to=2", headers=accept)
    assert (content_type, [(row["seq"], row["body"]) for row in log]) == (MSGPACK, [(0, b"b"), (1, b"c")])


@pytest.mark.parametrize(("publisher", "consumer"), [("msgpack", "json"), ("json", "msgpack")])
async def test_clients_of_either_wire_format_exchange_any_body(
    wire_cluster: ProcessCluster, publisher: str, consumer: str
) -> None:
    queue = f"clients-{publisher}"
    bodies = [b"\x00\x01\xfe", "text ☃", b"", "x" * 16384]
    async with (
        Client(wire_cluster.urls, wire=publisher) as sender,  # type: ignore[arg-type]
        Client(wire_cluster.urls, wire=consumer) as receiver,  # type: ignore[arg-type]
    ):
        await sender.declare(queue)
        await sender.publish(queue, bodies)
        got = await receiver.get(queue, count=10, ack="auto")
    assert [d.body for d in got] == [b if isinstance(b, bytes) else b.encode() for b in bodies]
