"""The Raft port before authentication: a challenge and nothing else, a frame larger than a handshake is
refused before it is read, and unauthenticated connections are capped (per source address and in all)
and given a deadline (the TLS handshake's included), so a flood of silent connections neither exhausts a
node nor keeps its peers out."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path

import msgpack
import pytest
from security_helpers import ADMIN, Answer, call, raft_handshake
from support.eventually import eventually

from cli.dev_tls import make_certificates
from cli.node_processes import HARNESS_SECRET, NodeProcess, ProcessCluster, wait_healthy
from cluster.replication.transport import FRAME_HEADER, HANDSHAKE_VERSION

PER_SOURCE = 8  # pending handshakes one address may hold
PENDING = 128  # pending handshakes in all
DEADLINE_S = 5.0
MIB = 1 << 20


def _rss_bytes(node: NodeProcess) -> int:
    assert node.process is not None
    status = Path(f"/proc/{node.process.pid}/status").read_text()
    line = next(row for row in status.splitlines() if row.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


async def _dial(node: NodeProcess, source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
    """A raw connection to the node's Raft port from `source`; True when the node sent its challenge
    (False when it hung up at once)."""
    reader, writer = await asyncio.open_connection(node.host, node.raft_port, local_addr=(source, 0))
    try:
        (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
        await reader.readexactly(length)
    except (asyncio.IncompleteReadError, ConnectionError):
        return reader, writer, False
    return reader, writer, True


async def _push(writer: asyncio.StreamWriter, announced: int, sent: int) -> int:
    """Announce a frame of `announced` bytes and send `sent` of them; the bytes the node took."""
    taken = 0
    try:
        writer.write(FRAME_HEADER.pack(announced))
        while taken < sent:
            writer.write(b"\0" * MIB)
            await writer.drain()
            taken += MIB
    except ConnectionError:
        pass
    return taken


async def test_a_huge_frame_before_authentication_is_refused_unread(secured: ProcessCluster) -> None:
    node = secured.nodes[0]
    before = _rss_bytes(node)
    dialled = [await _dial(node, "127.0.0.1") for _ in range(4)]
    try:
        taken = [await _push(writer, 48 * MIB, 47 * MIB) for _, writer, _ in dialled]
        grown = _rss_bytes(node) - before  # pre-fix: each connection's 47 MiB held until its deadline
        assert all(t < 47 * MIB for t in taken), taken
        assert grown < 48 * MIB, grown / MIB
    finally:
        for _, writer, _ in dialled:
            writer.close()


async def test_one_source_holds_few_pending_handshakes(secured: ProcessCluster) -> None:
    node = secured.nodes[0]
    dialled = [await _dial(node, "127.0.0.41") for _ in range(200)]
    try:
        challenged = sum(answered for _, _, answered in dialled)
        assert challenged <= PER_SOURCE, challenged
        assert await raft_handshake(node.host, node.raft_port, "node2", HARNESS_SECRET, node.name)
    finally:
        for _, writer, _ in dialled:
            writer.close()


async def test_the_oldest_pending_handshakes_make_way_when_many_sources_dial(secured: ProcessCluster) -> None:
    node = secured.nodes[0]
    dialled = [await _dial(node, f"127.0.1.{i}") for i in range(1, 33) for _ in range(PER_SOURCE)]
    try:
        assert all(answered for _, _, answered in dialled)
        oldest = dialled[: len(dialled) - PENDING]
        for reader, _, _ in oldest:  # closed when newer ones came, long before their deadline
            assert await asyncio.wait_for(reader.read(), DEADLINE_S / 2) == b""
        assert await raft_handshake(node.host, node.raft_port, "node2", HARNESS_SECRET, node.name)
    finally:
        for _, writer, _ in dialled:
            writer.close()


async def _flood(node: NodeProcess, source: str, stop: asyncio.Event) -> int:
    """Keep dialling the node's Raft port from `source` and never speaking; how many dials got through."""
    held: list[asyncio.StreamWriter] = []
    while not stop.is_set():
        with contextlib.suppress(OSError):
            _, writer, _ = await _dial(node, source)
            held.append(writer)
    for writer in held:
        writer.close()
    return len(held)


async def _publish_confirmed(url: str) -> None:
    """Publish until confirmed (503s while a leader is elected)."""

    async def past_the_election() -> Answer | None:
        answer = await call("POST", url, authorization=ADMIN, json={"messages": [{"body": "through"}]})
        return None if answer.status == 503 else answer

    answer = await eventually(past_the_election, "a leader to answer", timeout=30, interval=0.05)
    assert answer.status == 201, answer.body


async def test_a_restarted_peer_rejoins_and_the_cluster_commits_in_a_flood(secured: ProcessCluster) -> None:
    first, second, third = secured.nodes
    queue = first.url + "/api/queues/flooded"
    assert (await call("PUT", queue, authorization=ADMIN)).status in (201, 204)
    stop = asyncio.Event()
    flood = asyncio.ensure_future(_flood(first, "127.0.0.51", stop))
    try:
        await asyncio.to_thread(third.stop)
        await asyncio.to_thread(second.stop)
        second.start()
        await asyncio.to_thread(wait_healthy, [second])
        await _publish_confirmed(queue + "/messages")  # node1 and node2: the restarted peer got through
    finally:
        stop.set()
        dials = await flood
        third.start()
        await asyncio.to_thread(wait_healthy, [third])
    assert dials > 10 * PER_SOURCE, dials  # the flood kept more than its share knocking throughout


async def test_a_connection_that_never_finishes_its_handshake_is_closed(secured: ProcessCluster) -> None:
    """It gets a challenge (a 16-byte nonce) and nothing else, then the connection is closed."""
    node = secured.nodes[0]
    reader, writer = await asyncio.open_connection(node.host, node.raft_port, local_addr=("127.0.0.61", 0))
    try:
        (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
        challenge = msgpack.unpackb(await reader.readexactly(length))
        assert challenge[:2] == ["challenge", HANDSHAKE_VERSION] and len(challenge) == 3, challenge
        assert isinstance(challenge[2], bytes) and len(challenge[2]) == 16, challenge
        # silent after the challenge: the node hangs up at its deadline (waited for generously)
        assert await asyncio.wait_for(reader.read(), 6 * DEADLINE_S) == b""
    finally:
        writer.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_a_connection_that_never_starts_its_tls_handshake_is_closed(tmp_path: Path) -> None:
    """With `tls_raft`, the TLS handshake (done by asyncio, before the connection is counted as pending)
    has the same deadline: a connection that never sends its ClientHello is closed at it."""
    env = {**make_certificates(tmp_path), "QUORUMQ_TLS_HTTP": "false"}
    cluster = ProcessCluster.start(tmp_path / "data", 1, env=env)
    try:
        node = cluster.nodes[0]
        reader, writer = await asyncio.open_connection(node.host, node.raft_port)
        try:
            loop = asyncio.get_running_loop()
            opened = loop.time()
            # silent from the start: no TLS, so no challenge either; the node hangs up at its deadline
            assert await asyncio.wait_for(reader.read(), 6 * DEADLINE_S) == b""
            assert loop.time() - opened >= DEADLINE_S - 0.5  # at the deadline, not at once
        finally:
            writer.close()
    finally:
        cluster.stop()
