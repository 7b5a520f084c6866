"""Node to node: a peer without the cluster secret, or with a name the cluster does not know, can
neither inject Raft frames nor join; signed HTTP assertions are bound to user, method, request target,
body and time, never leave a node with TLS over plain HTTP, and large bodies are hashed off the event
loop."""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
from collections.abc import Awaitable
from typing import TypeVar

import msgpack
import pytest
from security_helpers import ADMIN, call, eventually_body, harness_assertion, raft_handshake

from api.forwarded_publish import PUBLISH
from cli.node_processes import HARNESS_SECRET, HARNESS_USER, ProcessCluster
from cluster.replication.transport import FRAME_HEADER, KIND_REQUEST, Handshake
from cluster.security.peer_auth import (
    ASSERTION_TTL_MS,
    DIGEST_IN_THREAD_BYTES,
    NODE_AUTH_HEADER,
    Asserted,
    NodeCaller,
    PlainHttpRefused,
    body_digest,
    body_digest_off_loop,
    sign_assertion,
    verify_assertion,
)

SECRET = HARNESS_SECRET
T = TypeVar("T")


async def test_raft_port_welcomes_only_known_peers_with_the_secret(secured: ProcessCluster) -> None:
    node = secured.nodes[0]
    assert await raft_handshake(node.host, node.raft_port, "node2", SECRET, "node1")
    assert not await raft_handshake(node.host, node.raft_port, "node2", "wrong-secret", "node1")
    assert not await raft_handshake(node.host, node.raft_port, "intruder", SECRET, "node1")
    assert not await raft_handshake(node.host, node.raft_port, "node1", SECRET, "node1")  # its own name
    assert not await raft_handshake(node.host, node.raft_port, "node2", SECRET, "node3")  # meant for node3


async def test_a_node_without_the_secret_cannot_join(secured: ProcessCluster) -> None:
    body = {"name": "node9", "http": "http://127.0.0.1:1", "raft": "127.0.0.1:2"}
    data = json.dumps(body).encode()
    forged = harness_assertion(
        "@node", "POST", "/api/nodes", body_digest(data), to="node1", secret="wrong-secret"
    )
    headers = {NODE_AUTH_HEADER: forged, "Content-Type": "application/json"}
    answer = await call("POST", secured.urls[0] + "/api/nodes", data=data, headers=headers)
    assert answer.status == 401
    nodes = await call("GET", secured.urls[0] + "/api/nodes", authorization=ADMIN)
    assert sorted(n["name"] for n in nodes.body) == ["node1", "node2", "node3"]
    assert (await call("GET", secured.urls[0] + "/api/health")).status == 200


def test_assertions_are_bound_to_user_destination_method_target_body_and_time() -> None:
    now, target, body = 1_000_000, "/api/queues/a/messages?x=1", body_digest(b"{}")
    value = sign_assertion(SECRET, "alice", "POST", target, body, now, to="n1")
    verify = functools.partial(verify_assertion, node="n1")
    asserted = verify(SECRET, value, "POST", target, now)
    assert isinstance(asserted, Asserted) and asserted.user == "alice" and asserted.body_sha256 == body
    assert asserted.expires_ms == now + ASSERTION_TTL_MS and len(asserted.nonce) == 16
    assert verify(SECRET, value, "GET", target, now) is None
    assert verify(SECRET, value, "POST", "/api/queues/b/messages?x=1", now) is None
    assert verify(SECRET, value, "POST", "/api/queues/a/messages?x=2", now) is None
    assert verify(SECRET, value, "POST", "/api/queues/a/messages", now) is None
    assert verify(SECRET, value.replace(body, body_digest(b"[]")), "POST", target, now) is None
    assert verify("other", value, "POST", target, now) is None
    assert verify(SECRET, value, "POST", target, now + ASSERTION_TTL_MS + 1) is None
    assert verify(SECRET, value.replace(";alice;", ";bob;"), "POST", target, now) is None
    assert verify_assertion(SECRET, value, "POST", target, now, node="n2") is None  # another node
    assert verify(SECRET, value.replace(";n1;", ";n2;"), "POST", target, now) is None
    assert sign_assertion(SECRET, "alice", "POST", target, body, now, to="n1") != value  # a fresh nonce
    v2 = ";".join(["v2", *value.split(";")[1:2], *value.split(";")[3:]])  # the earlier format: no `TO`
    assert verify(SECRET, v2, "POST", target, now) is None


async def test_a_node_with_tls_never_sends_an_assertion_over_plain_http() -> None:
    caller = NodeCaller(SECRET, ssl.create_default_context())
    with pytest.raises(PlainHttpRefused):
        await caller.headers("GET", "http://127.0.0.1:8080/api/queues", to="n1")
    signed = await caller.headers("GET", "https://127.0.0.1:8080/api/queues?x=1", to="n1")
    target = "/api/queues?x=1"
    assert verify_assertion(SECRET, signed[NODE_AUTH_HEADER], "GET", target, node="n1") is not None
    plain = await NodeCaller(SECRET).headers("GET", "http://127.0.0.1:8080/api/queues", to="n1")  # no TLS
    assert NODE_AUTH_HEADER in plain


async def _with_other_tasks_run(work: Awaitable[T]) -> tuple[T, int]:
    """What `work` gives, and how many times a task started just before it ran on the event loop while
    `work` was under way: 0 when `work` never gave the loop up."""
    ran, done = 0, False

    async def other_task() -> None:
        nonlocal ran
        while not done:
            ran += 1
            await asyncio.sleep(0)

    task = asyncio.get_running_loop().create_task(other_task())
    try:
        return await work, ran
    finally:
        done = True
        await task


async def test_rule_a_body_of_1_mib_or_more_is_hashed_while_the_event_loop_runs_other_tasks() -> None:
    """`body_digest_off_loop`, which both the signing node (`NodeCaller.headers`) and the receiving one
    (`api.auth`) hash a body with: from 1 MiB on in a worker thread, below it in place."""
    large, small = b"x" * DIGEST_IN_THREAD_BYTES, b"x" * (DIGEST_IN_THREAD_BYTES - 1)
    digest, ran = await _with_other_tasks_run(body_digest_off_loop(large))
    assert digest == body_digest(large) and ran > 0
    digest, ran = await _with_other_tasks_run(body_digest_off_loop(small))
    assert digest == body_digest(small) and ran == 0  # the loop did nothing else meanwhile
    url, target = "http://127.0.0.1:8080/api/queues/q/messages", "/api/queues/q/messages"
    signed, ran = await _with_other_tasks_run(NodeCaller(SECRET).headers("POST", url, large, to="n1"))
    asserted = verify_assertion(SECRET, signed[NODE_AUTH_HEADER], "POST", target, node="n1")
    assert asserted is not None and asserted.body_sha256 == body_digest(large) and ran > 0


def _forwarded_publish_frame(queue: str) -> bytes:
    """A forwarded publish as a node sends it on its authenticated link to the queue's leader (a request
    frame `[id, [PUBLISH, queue, user, hops, publisher, seq, messages]]`), as an attacker captured it."""
    request = [PUBLISH, queue, HARNESS_USER, 1, "replayer", 1, [[b"replayed", {}, "utf8", None]]]
    payload = msgpack.packb([KIND_REQUEST, msgpack.packb([7, request])])
    return FRAME_HEADER.pack(len(payload)) + payload


async def test_a_forwarded_publish_frame_replayed_on_another_connection_publishes_nothing(
    secured: ProcessCluster,
) -> None:
    queue = secured.urls[0] + "/api/queues/replayed"
    assert (await call("PUT", queue, authorization=ADMIN)).status in (201, 204)
    leader_name = (await call("GET", queue, authorization=ADMIN)).body["leader"]
    leader = next(node for node in secured.nodes if node.name == leader_name)
    peer = next(node.name for node in secured.nodes if node is not leader)
    for hello_secret in (None, "not-the-cluster-secret"):  # no handshake; one the replayer cannot prove
        reader, writer = await asyncio.open_connection(leader.host, leader.raft_port)
        try:
            (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
            _, _, server_nonce = msgpack.unpackb(await reader.readexactly(length))
            if hello_secret is not None:
                hello = Handshake(peer, leader.name, server_nonce, b"n" * 16, "").hello(hello_secret.encode())
                writer.write(hello)
            writer.write(_forwarded_publish_frame("replayed"))
            await writer.drain()
            assert await asyncio.wait_for(reader.read(), 30) == b""  # hung up on, nothing answered
        finally:
            writer.close()
    stats = await call("GET", queue, authorization=ADMIN)
    assert stats.body["messages"] == 0, stats.body
    # the control: the same frame on a connection that proved the secret is served
    reader, writer = await asyncio.open_connection(leader.host, leader.raft_port)
    try:
        (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
        _, _, server_nonce = msgpack.unpackb(await reader.readexactly(length))
        writer.write(Handshake(peer, leader.name, server_nonce, b"n" * 16, "").hello(HARNESS_SECRET.encode()))
        (length,) = FRAME_HEADER.unpack(await asyncio.wait_for(reader.readexactly(FRAME_HEADER.size), 30))
        await reader.readexactly(length)  # welcomed
        writer.write(_forwarded_publish_frame("replayed"))
        await writer.drain()
        await eventually_body(queue, lambda body: body["messages"] == 1)
    finally:
        writer.close()
