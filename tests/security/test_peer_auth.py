"""Node to node: a peer without the cluster secret, or with a name the cluster does not know, can
neither inject Raft frames nor join; signed HTTP assertions are bound to user, path, method and time."""

from __future__ import annotations

import asyncio

import msgpack
from security_helpers import ADMIN, call

from cli.node_processes import HARNESS_SECRET, ProcessCluster
from cluster.peer_auth import ASSERTION_TTL_MS, NODE_AUTH_HEADER, sign_assertion, verify_assertion
from cluster.transport import FRAME_HEADER, _proof

SECRET = HARNESS_SECRET


async def _handshake(host: str, port: int, name: str, secret: str) -> bool:
    """Dial a node's Raft port as `name` proving `secret`; True when the node welcomes us."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
        _, server_nonce = msgpack.unpackb(await reader.readexactly(length))
        client_nonce = b"n" * 16
        proof = _proof(secret.encode(), b"dial", server_nonce, client_nonce, name.encode())
        hello = msgpack.packb(["hello", name, client_nonce, proof])
        writer.write(FRAME_HEADER.pack(len(hello)) + hello)
        await writer.drain()
        header = await asyncio.wait_for(reader.read(FRAME_HEADER.size), 10)
        return len(header) == FRAME_HEADER.size
    finally:
        writer.close()


async def test_raft_port_welcomes_only_known_peers_with_the_secret(secured: ProcessCluster) -> None:
    node = secured.nodes[0]
    assert await _handshake(node.host, node.raft_port, "node2", SECRET)
    assert not await _handshake(node.host, node.raft_port, "node2", "wrong-secret")
    assert not await _handshake(node.host, node.raft_port, "intruder", SECRET)
    assert not await _handshake(node.host, node.raft_port, "node1", SECRET)  # its own name


async def test_a_node_without_the_secret_cannot_join(secured: ProcessCluster) -> None:
    body = {"name": "node9", "http": "http://127.0.0.1:1", "raft": "127.0.0.1:2"}
    forged = sign_assertion("wrong-secret", "@node", "POST", "/api/nodes")
    answer = await call("POST", secured.urls[0] + "/api/nodes", json=body, headers={NODE_AUTH_HEADER: forged})
    assert answer.status == 401
    nodes = await call("GET", secured.urls[0] + "/api/nodes", authorization=ADMIN)
    assert sorted(n["name"] for n in nodes.body) == ["node1", "node2", "node3"]
    assert (await call("GET", secured.urls[0] + "/api/health")).status == 200


def test_assertions_are_bound_to_user_method_path_and_time() -> None:
    now = 1_000_000
    value = sign_assertion(SECRET, "alice", "POST", "/api/queues/a/messages", now)
    assert verify_assertion(SECRET, value, "POST", "/api/queues/a/messages", now) == "alice"
    assert verify_assertion(SECRET, value, "GET", "/api/queues/a/messages", now) is None
    assert verify_assertion(SECRET, value, "POST", "/api/queues/b/messages", now) is None
    assert verify_assertion("other", value, "POST", "/api/queues/a/messages", now) is None
    assert (
        verify_assertion(SECRET, value, "POST", "/api/queues/a/messages", now + ASSERTION_TTL_MS + 1) is None
    )
    assert verify_assertion(SECRET, "bob" + value[5:], "POST", "/api/queues/a/messages", now) is None
