"""Limits: each one answers a clear 4xx (408/413/414/422/429) and the node keeps serving; a forwarded
publish is held to the limits of the node that reads it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from security_helpers import ADMIN, Answer, call, eventually_body
from support.eventually import eventually

from api.publish_job import MAX_BATCH_MESSAGES
from api.publishing import MAX_PEER_FORWARD_BYTES
from cli.node_processes import ProcessCluster, plan_cluster, wait_healthy

LIMITS = {
    "QUORUMQ_MAX_CONSUMERS_PER_QUEUE": "2",
    "QUORUMQ_MAX_EXCHANGES": "2",
    "QUORUMQ_MAX_BINDINGS": "2",
    "QUORUMQ_MAX_MESSAGE_HEADERS": "4",
    "QUORUMQ_MAX_HEADER_BYTES": "200",
    "QUORUMQ_MAX_REQUEST_BYTES": "100000",
    "QUORUMQ_MAX_QUEUE_NAME_LENGTH": "40",
    "QUORUMQ_REQUEST_READ_TIMEOUT_MS": "500",
    "QUORUMQ_KEEPALIVE_TIMEOUT_MS": "500",
}
GENEROUS_S = 30.0  # how long a test waits for the node to close a connection (the machine is shared)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """A cluster with small limits."""
    cluster = ProcessCluster.start(tmp_path_factory.mktemp("limited"), 3, env=LIMITS)
    yield cluster
    cluster.stop()


async def test_a_queue_name_over_the_limit_is_414(limited: ProcessCluster) -> None:
    answer = await call("PUT", limited.urls[0] + "/api/queues/" + "q" * 41, authorization=ADMIN, json={})
    assert answer.status == 414 and answer.body["error"] == "name_too_long"
    assert (await call("PUT", limited.urls[0] + "/api/queues/" + "q" * 40, authorization=ADMIN)).status == 201


async def test_too_many_or_too_large_message_headers_are_422_and_413(limited: ProcessCluster) -> None:
    url = limited.urls[0] + "/api/queues/headers"
    assert (await call("PUT", url, authorization=ADMIN)).status == 201
    many = {"messages": [{"body": "m", "headers": {f"h{i}": i for i in range(5)}}]}
    answer = await call("POST", url + "/messages", authorization=ADMIN, json=many)
    assert answer.status == 422 and answer.body["error"] == "too_many_headers"
    large = {"messages": [{"body": "m", "headers": {"h": "x" * 300}}]}
    assert (await call("POST", url + "/messages", authorization=ADMIN, json=large)).status == 413
    fine = {"messages": [{"body": "m", "headers": {f"h{i}": i for i in range(4)}}]}
    assert (await call("POST", url + "/messages", authorization=ADMIN, json=fine)).status == 201


async def test_a_request_body_over_the_limit_is_413(limited: ProcessCluster) -> None:
    url = limited.urls[1] + "/api/queues/big/messages"
    answer = await call("POST", url, authorization=ADMIN, json={"messages": [{"body": "x" * 200_000}]})
    assert answer.status == 413 and answer.body["error"] == "too_large"


async def test_consumers_beyond_the_limit_are_429_on_any_node(limited: ProcessCluster) -> None:
    url = "/api/queues/crowded"
    assert (await call("PUT", limited.urls[0] + url, authorization=ADMIN)).status == 201
    for _ in range(2):
        assert (
            await call("POST", limited.urls[0] + url + "/consumers", authorization=ADMIN, json={})
        ).status == 201
    for base in limited.urls:
        answer = await call("POST", base + url + "/consumers", authorization=ADMIN, json={})
        assert answer.status == 429 and answer.body["error"] == "too_many_consumers"


async def test_a_body_that_does_not_arrive_in_time_is_408(limited: ProcessCluster) -> None:
    node = limited.nodes[0]
    reader, writer = await asyncio.open_connection(node.host, node.http_port)
    writer.write(
        b"POST /api/queues/slow/messages HTTP/1.1\r\nHost: localhost\r\n"
        + f"Authorization: {ADMIN}\r\n".encode()
        + b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"messages"'
    )
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    assert status_line.split()[1] == b"408"
    assert (await call("GET", limited.urls[0] + "/api/health")).status == 200


async def test_more_messages_per_publish_than_the_limit_is_413(secured: ProcessCluster) -> None:
    url = secured.urls[0] + "/api/queues/batched"
    assert (await call("PUT", url, authorization=ADMIN)).status == 201
    over = {"messages": [{"body": ""}] * (MAX_BATCH_MESSAGES + 1)}
    answer = await call("POST", url + "/messages", authorization=ADMIN, json=over)
    assert answer.status == 413 and answer.body["error"] == "too_large", answer.body
    stats = await call("GET", url, authorization=ADMIN)
    assert stats.body["messages"] == 0, stats.body  # nothing of it was published
    at_the_limit = {"messages": [{"body": ""}] * MAX_BATCH_MESSAGES}
    assert (await call("POST", url + "/messages", authorization=ADMIN, json=at_the_limit)).status == 201


async def test_an_idle_keep_alive_connection_is_closed_after_the_keepalive_timeout(
    limited: ProcessCluster,
) -> None:
    node = limited.nodes[0]
    reader, writer = await asyncio.open_connection(node.host, node.http_port)
    try:
        writer.write(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), GENEROUS_S)
        assert head.split()[1] == b"200", head
        assert b"connection: close" not in head.lower(), head  # kept alive after the answer
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)
        assert await asyncio.wait_for(reader.read(), GENEROUS_S) == b""  # the node hung up on the idle client
    finally:
        writer.close()


STRICT = {"QUORUMQ_MAX_MESSAGE_BYTES": "100", "QUORUMQ_MAX_HEADER_BYTES": "100"}
OVER_STRICT = [{"body": "x" * 200}, {"body": "m", "headers": {"h": "x" * 200}}]  # each over STRICT


async def _declared_led_by(cluster: ProcessCluster, queue: str, leader: str) -> str:
    """The path of `queue`, replicated on every node and led by `leader`."""
    path = f"/api/queues/{queue}"
    arguments = {"arguments": {"x-quorum-initial-group-size": 3}}
    assert (await call("PUT", cluster.urls[0] + path, authorization=ADMIN, json=arguments)).status == 201

    async def led() -> bool:
        if (await call("GET", cluster.urls[0] + path, authorization=ADMIN)).body["leader"] == leader:
            return True
        await call("POST", cluster.urls[0] + path + "/leader", authorization=ADMIN, json={"node": leader})
        return False

    await eventually(led, f"{leader} to lead {queue}", timeout=30, interval=0.2)
    await eventually_body(cluster.urls[0] + path, lambda body: body["leader"] == leader)
    return path


async def _publish(url: str, message: dict[str, Any]) -> Answer:
    return await call("POST", url + "/messages", authorization=ADMIN, json={"messages": [message]})


async def test_rule_a_forwarded_publish_is_held_to_the_limits_of_the_node_the_client_called(
    tmp_path: Path,
) -> None:
    """node2 takes messages and headers of at most 100 bytes, node1 and node3 the defaults. A publish of
    up to 1 MiB goes to its leader over the peer link, checked by the node the client called and trusted
    by the leader; a larger one goes over HTTP, checked by the leader alone."""
    nodes = plan_cluster(3, tmp_path)
    generous, strict, other = nodes
    for node in nodes:
        node.env = {**os.environ, **STRICT} if node is strict else None
        node.start()
    cluster = ProcessCluster(nodes)
    try:
        await asyncio.to_thread(wait_healthy, nodes)
        to_generous = await _declared_led_by(cluster, "led-by-generous", generous.name)
        to_strict = await _declared_led_by(cluster, "led-by-strict", strict.name)
        for message in OVER_STRICT:  # until the peer links are up, publishes go over HTTP: retried

            async def answered(url: str, status: int, message: dict[str, Any] = message) -> Answer | None:
                answer = await _publish(url, message)
                return answer if answer.status == status else None

            refused = await eventually(
                lambda: answered(strict.url + to_generous, 413), "node2 to refuse", timeout=30, interval=0.2
            )  # the node called refuses what its leader takes
            assert refused.body["error"] == "too_large", refused.body
            assert (await _publish(generous.url + to_generous, message)).status == 201
            await eventually(
                lambda: answered(other.url + to_strict, 201), "node3 to pass it", timeout=30, interval=0.2
            )  # the leader takes what the node called let through
            assert (await _publish(strict.url + to_strict, message)).status == 413  # its own limit, called
        large = {"body": "x" * (MAX_PEER_FORWARD_BYTES + 1)}  # forwarded over HTTP
        refused = await _publish(other.url + to_strict, large)
        assert refused.status == 413, refused.body  # by the leader
        passed = await _publish(strict.url + to_generous, large)
        assert passed.status == 201, passed.body  # not checked by the node called
    finally:
        cluster.stop()


async def test_exchanges_and_bindings_past_their_limits_are_429(limited: ProcessCluster) -> None:
    """Review finding (unbounded routing): every routing change makes every node rebuild its table, and
    a headers exchange tests its bindings one by one per message, so the cluster holds at most
    `max_exchanges` declared exchanges and `max_bindings` bindings; declaring or binding again what
    exists still answers as before."""
    base = limited.urls[1]
    assert (await call("PUT", base + "/api/queues/bound", authorization=ADMIN, json={})).status == 201
    for name in ("x1", "x2"):
        declared = await call(
            "PUT", f"{base}/api/exchanges/%2F/{name}", authorization=ADMIN, json={"type": "fanout"}
        )
        assert declared.status == 201, declared.body
    third = await call("PUT", base + "/api/exchanges/%2F/x3", authorization=ADMIN, json={"type": "fanout"})
    assert third.status == 429 and third.body["error"] == "too_many_exchanges", third.body
    again = await call("PUT", base + "/api/exchanges/%2F/x1", authorization=ADMIN, json={"type": "fanout"})
    assert again.status == 204
    for key in ("a", "b"):
        bound = await call(
            "POST", base + "/api/bindings/%2F/e/x1/q/bound", authorization=ADMIN, json={"routing_key": key}
        )
        assert bound.status == 201, bound.body
    third = await call(
        "POST", base + "/api/bindings/%2F/e/x1/q/bound", authorization=ADMIN, json={"routing_key": "c"}
    )
    assert third.status == 429 and third.body["error"] == "too_many_bindings", third.body
    again = await call(
        "POST", base + "/api/bindings/%2F/e/x1/q/bound", authorization=ADMIN, json={"routing_key": "a"}
    )
    assert again.status == 201
