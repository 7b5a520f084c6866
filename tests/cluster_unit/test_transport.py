"""The peer transport: mutual HMAC authentication and fairness between groups."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections import OrderedDict, deque
from collections.abc import Callable

import msgpack
import pytest
import uvloop
from support.eventually import eventually

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.replication.transport import (
    KIND_CONTROL,
    KIND_RAFT,
    MAX_FRAME_BYTES,
    Handshake,
    Transport,
    _decode,
    _frame,
    _kind_and_body_frame,
    _Peer,
    _read_frame,
)


class Inbox:
    """Collects frames a transport hands over, and wakes a waiter."""

    def __init__(self) -> None:
        self.frames: list[tuple[str, int, bytes]] = []
        self.arrived = asyncio.Event()

    def __call__(self, peer: str, kind: int, body: bytes) -> None:
        self.frames.append((peer, kind, body))
        self.arrived.set()


async def _pair(secret_a: str, secret_b: str) -> tuple[Transport, Transport, Inbox]:
    port_a, port_b = free_ports(2)
    inbox_b = Inbox()
    a = Transport("a", Address("127.0.0.1", port_a), secret_a, Inbox(), incarnation="inc-a")
    b = Transport("b", Address("127.0.0.1", port_b), secret_b, inbox_b)
    await a.start()
    await b.start()
    a.set_peer("b", b.listen)
    b.set_peer("a", a.listen)  # a node accepts connections only from peers it knows
    return a, b, inbox_b


async def test_peers_sharing_the_secret_exchange_frames() -> None:
    a, b, inbox = await _pair("s3cret", "s3cret")
    try:
        assert a.send("b", "g1", KIND_RAFT, b"hello")
        await asyncio.wait_for(inbox.arrived.wait(), 10)
        assert inbox.frames == [("a", KIND_RAFT, b"hello")]
    finally:
        await a.stop()
        await b.stop()


async def test_rule_a_forgotten_peer_delivers_nothing_more_on_the_connection_it_had() -> None:
    """`remove_peer` also closes the peer's inbound connection: a forgotten node's frames are not taken,
    and its redial is refused (found in review: only the outbound connection was closed)."""
    a, b, inbox = await _pair("s3cret", "s3cret")
    try:
        assert a.send("b", "g1", KIND_RAFT, b"before")
        await asyncio.wait_for(inbox.arrived.wait(), 10)
        b.remove_peer("a")
        inbox.frames.clear()

        def redial_refused() -> bool:
            a.send("b", "g1", KIND_RAFT, b"after")
            return b.rejected_handshakes > 0 or bool(inbox.frames)

        await eventually(redial_refused, "a's frames to be taken or its redial refused", interval=0.05)
        assert inbox.frames == [] and b.rejected_handshakes > 0
    finally:
        await a.stop()
        await b.stop()


async def test_peer_with_a_wrong_secret_is_rejected_and_delivers_nothing() -> None:
    a, b, inbox = await _pair("wrong", "s3cret")
    try:

        def sent_until_rejected() -> bool:
            a.send("b", "g1", KIND_RAFT, b"injected")
            return b.rejected_handshakes > 0

        await eventually(sent_until_rejected, "a rejected handshake", interval=0.05)
        assert inbox.frames == []
        assert not a.peers()["b"]
    finally:
        await a.stop()
        await b.stop()


async def test_the_accepting_side_learns_the_incarnation_the_peer_proved() -> None:
    """Incarnations travel in the hello (issue 17, finding 7)."""
    a, b, inbox = await _pair("s3cret", "s3cret")
    try:
        assert b.peer_incarnation("a") == ""
        assert a.send("b", "g1", KIND_RAFT, b"hello")
        await asyncio.wait_for(inbox.arrived.wait(), 10)
        assert b.peer_incarnation("a") == "inc-a"
    finally:
        await a.stop()
        await b.stop()


async def _raw_hello(b: Transport, hello: Callable[[bytes], bytes]) -> list:
    """Dial `b` by hand and send the frame `hello(server_nonce)`; b's answer ([] if it hung up)."""
    reader, writer = await asyncio.open_connection(b.listen.host, b.listen.port)
    try:
        challenge = _decode(await _read_frame(reader))
        writer.write(hello(challenge[2]))
        await writer.drain()
        try:
            return _decode(await asyncio.wait_for(_read_frame(reader), 10))
        except asyncio.IncompleteReadError:
            return []
    finally:
        writer.close()
        await writer.wait_closed()


async def test_rule_a_hello_proves_its_incarnation_and_a_forged_one_is_refused() -> None:
    """The proof covers the incarnation (issue 17, finding 7)."""
    a, b, _ = await _pair("s3cret", "s3cret")
    b.set_peer("other", a.listen)  # a name b accepts; nothing listens for it but `a`
    try:
        nonce = b"n" * 16
        genuine = lambda server: Handshake("other", "b", server, nonce, "inc-1").hello(b"s3cret")  # noqa: E731
        assert (await _raw_hello(b, genuine))[0] == "welcome"
        assert b.peer_incarnation("other") == "inc-1"

        def forged(server: bytes) -> bytes:
            proved = Handshake("other", "b", server, nonce, "inc-1").proof(b"s3cret", "hello")
            return _frame(msgpack.packb(["hello", "other", "b", nonce, "inc-2", proved]))

        assert await _raw_hello(b, forged) == []
        assert b.rejected_handshakes == 1 and b.peer_incarnation("other") == "inc-1"
    finally:
        await a.stop()
        await b.stop()


async def test_w1_a_hello_of_handshake_version_1_is_refused() -> None:
    """Version 1's hello named no node dialled (so it could be relayed): a node of this version refuses
    it, even with the right secret, and says why in its log."""
    a, b, _ = await _pair("s3cret", "s3cret")
    b.set_peer("old", a.listen)
    try:
        nonce = b"n" * 16

        def version1(server: bytes) -> bytes:
            proof = hmac.new(
                b"s3cret", b"\x00".join([b"dial", server, nonce, b"old"]), hashlib.sha256
            ).digest()
            return _frame(msgpack.packb(["hello", "old", nonce, proof]))

        assert await _raw_hello(b, version1) == []
        assert b.rejected_handshakes == 1 and b.peer_incarnation("old") == ""
    finally:
        await a.stop()
        await b.stop()


def test_frames_are_taken_round_robin_over_groups() -> None:
    transport = Transport("a", Address("127.0.0.1", 1), "s", Inbox())
    peer = _Peer("b", Address("127.0.0.1", 2), OrderedDict())
    peer.queues["catch-up"] = deque(f"big{i}".encode() for i in range(1000))
    peer.queues["heartbeats"] = deque([b"hb"])
    peer.queued = 1001
    first_two = [transport._next_frame(peer), transport._next_frame(peer)]
    assert b"hb" in first_two


@pytest.mark.parametrize("size", [0, 1, 255, 256, 65535, 65536, 1 << 20])
@pytest.mark.parametrize("kind", [KIND_RAFT, KIND_CONTROL])
def test_a_frame_built_without_copies_is_the_msgpack_frame_peers_decode(kind: int, size: int) -> None:
    body = bytes(index % 251 for index in range(size))
    assert _kind_and_body_frame(kind, body) == _frame(msgpack.packb([kind, body]))


def test_a_frame_for_a_peer_whose_connection_just_closed_is_queued_and_the_node_does_not_exit() -> None:
    """Under uvloop (the node's loop), writing to a connection already closed raises instead of being
    ignored: a node exited with 'unable to perform operation on <TCPTransport closed=True>' when its Raft
    round sent to a peer whose connection had closed before the transport's pump noticed."""

    async def scenario() -> None:
        a, b, inbox = await _pair("s3cret", "s3cret")
        try:
            assert a.send("b", "g1", KIND_RAFT, b"before")
            await asyncio.wait_for(inbox.arrived.wait(), 10)
            peer = a._peers["b"]
            assert peer.writer is not None
            _, closed_writer = await asyncio.open_connection(b.listen.host, b.listen.port)
            closed_writer.transport.abort()
            await asyncio.sleep(0)  # one loop turn: uvloop closes the handle (call_soon), nothing else runs
            peer.writer = closed_writer  # what the pump still holds when its connection closes under it
            assert a.send("b", "g1", KIND_RAFT, b"after")  # queued for the next connection
        finally:
            await a.stop()
            await b.stop()

    loop = uvloop.new_event_loop()
    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()


class LinkLosses:
    """Counts the links a transport reports lost, by peer."""

    def __init__(self) -> None:
        self.lost: list[str] = []

    def __call__(self, peer: str) -> None:
        self.lost.append(peer)


async def test_rule_a_frame_over_the_limit_is_refused_by_its_sender_and_the_link_stays_up() -> None:
    """A frame no peer takes is not put on the wire: the peer would close the link that carries every
    group's frames, every time it was sent again."""
    port_a, port_b = free_ports(2)
    inbox, losses = Inbox(), LinkLosses()
    a = Transport("a", Address("127.0.0.1", port_a), "s3cret", Inbox(), on_link_lost=losses)
    b = Transport("b", Address("127.0.0.1", port_b), "s3cret", inbox, on_link_lost=losses)
    await a.start()
    await b.start()
    try:
        a.set_peer("b", b.listen)
        b.set_peer("a", a.listen)
        assert a.send("b", "g1", KIND_RAFT, b"before")
        await asyncio.wait_for(inbox.arrived.wait(), 10)
        assert not a.send("b", "g1", KIND_RAFT, bytes(MAX_FRAME_BYTES))  # with its envelope, over
        inbox.arrived.clear()
        assert a.send("b", "g1", KIND_RAFT, b"after")
        await asyncio.wait_for(inbox.arrived.wait(), 10)
        assert [body for _, _, body in inbox.frames] == [b"before", b"after"]
        assert losses.lost == [] and a.linked("b") and b.linked("a")
    finally:
        await a.stop()
        await b.stop()


async def test_rule_a_frame_over_the_limit_from_a_peer_is_skipped_and_its_link_stays_up() -> None:
    """A peer of an earlier version may send a frame over the limit (an entry written before operations
    were held to it): it is read past, not a reason to close the connection its other frames share."""
    port_a, port_b = free_ports(2)
    inbox, losses = Inbox(), LinkLosses()
    b = Transport("b", Address("127.0.0.1", port_b), "s3cret", inbox, on_link_lost=losses)
    await b.start()
    b.set_peer("old", Address("127.0.0.1", port_a))  # nothing listens there: only its inbound link counts
    reader, writer = await asyncio.open_connection(b.listen.host, b.listen.port)
    try:
        challenge = _decode(await _read_frame(reader))
        writer.write(Handshake("old", "b", challenge[2], b"n" * 16, "").hello(b"s3cret"))
        assert _decode(await asyncio.wait_for(_read_frame(reader), 10))[0] == "welcome"
        writer.write(_kind_and_body_frame(KIND_RAFT, bytes(MAX_FRAME_BYTES)))  # over, with its envelope
        writer.write(_kind_and_body_frame(KIND_RAFT, b"after"))
        await writer.drain()
        await asyncio.wait_for(inbox.arrived.wait(), 30)
        assert inbox.frames == [("old", KIND_RAFT, b"after")]
        assert losses.lost == [] and b.skipped_frames == 1
    finally:
        writer.close()
        await writer.wait_closed()
        await b.stop()


async def test_rule_stopping_while_a_dial_fails_stops_the_dialling_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stop that cancels a peer's dial as the dial fails is not lost: `asyncio.wait_for` (Python 3.11)
    returns the finished dial's outcome instead of the cancellation, and the dial loop went on for ever
    (a node whose peer was down could hang in `stop`)."""
    transport = Transport("a", Address("127.0.0.1", free_ports(1)[0]), "s3cret", Inbox())
    await transport.start()
    stopping: list[asyncio.Task[None]] = []

    async def refused_as_the_node_stops(*args: object, **kwargs: object) -> None:
        if not stopping:
            stopping.append(asyncio.ensure_future(transport.stop()))
            await asyncio.sleep(0)  # the stop cancels this dial's task before the dial fails
        raise ConnectionRefusedError("the peer is down")

    monkeypatch.setattr(asyncio, "open_connection", refused_as_the_node_stops)
    transport.set_peer("b", Address("127.0.0.1", free_ports(1)[0]))
    await eventually(lambda: stopping, "the stop")
    await asyncio.wait_for(stopping[0], 5)
