"""The peer transport: one Raft TCP port per node, one outbound connection per peer for all groups.

Connections start with a mutual HMAC challenge-response over the cluster secret (the secret never crosses
the wire), version HANDSHAKE_VERSION (docs/decisions/0019): the accepting side sends a nonce, the dialling
side answers with a hello naming itself, the node it means to dial, its own nonce and its incarnation (the
id of its database), and the accepting side welcomes it. Both proofs cover the same `Handshake`: both
names, both nonces, the incarnation and, with TLS, the connection's channel binding (`tls-unique`). So a
hello is worth nothing to any node but the one it was made for, over any connection but the one it was
made on: a relay between two nodes (a process on an address one of them dials, without the secret) is
refused. A node of an earlier version cannot complete it (nor this one an earlier version's). Then each
side sends length-prefixed msgpack frames `[kind, body]`.
Outgoing frames are queued per peer and per group and written round-robin over groups, so a group sending a
large catch-up cannot starve another group's heartbeats; a frame is written at once instead when nothing is
queued for the peer and its socket keeps up. A lost connection drops what was queued; Raft retransmits.

A frame holds at most MAX_FRAME_BYTES (what every version takes; the operations a group proposes are held
to fit it, `cluster.replication.proposals.MAX_OPERATION_BYTES`). A larger one is not sent (`send` is False),
and one received (from a node of an earlier version) is read past and dropped: closing the connection for it
would drop every group's frames with it, each time it was sent again.

Before a connection has authenticated, it is held to little: frames of at most MAX_HANDSHAKE_FRAME_BYTES
(a larger length is refused before anything of it is read), a deadline of HANDSHAKE_TIMEOUT_S (the TLS
handshake too), and a bounded number of such connections (`cluster.security.pending_handshakes`).

A partition must not outlive its heal in a connection: TCP keeps retransmitting into a cut link with a
doubling timeout, so a connection that survived seconds of partition may stay silent for seconds more
after it heals, delaying the next election (fault schedule seed 106, `bridge` then `random-halves`:
3.5 s without confirms). A dialled connection whose data stays unacknowledged for `UNACKED_TIMEOUT_MS`
is closed by the kernel (TCP_USER_TIMEOUT; heartbeats keep data in flight) and dialled anew, each dial
given up after `CONNECT_TIMEOUT_S`; a peer's new connection replaces its older inbound one.

A peer is `linked` while both connections are up: the one this node dialled (its frames to the peer) and
the peer's (the peer's frames to it). `on_link_lost(peer)` is called whenever either closes: frames sent
on it, or queued for it at the other end, may have been lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import socket
import ssl
import struct
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

import msgpack

from cluster.config import Address
from cluster.security.pending_handshakes import PendingHandshakes
from cluster.security.source_address import source_key
from raft_log.msgpack_parts import array_header, bin_header

log = logging.getLogger(__name__)

FRAME_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 64 * 1024 * 1024  # to or from an authenticated peer
MAX_HANDSHAKE_FRAME_BYTES = 4096  # a challenge, hello or welcome is a few hundred bytes
MAX_QUEUED_PER_PEER = 20000
SKIP_CHUNK_BYTES = 1024 * 1024  # an oversized frame is read past in pieces of this, never held whole
WRITE_BUFFER_LIMIT = 256 * 1024  # bytes the socket may hold unsent before frames queue (and the pump drains)
HANDSHAKE_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 1.0
UNACKED_TIMEOUT_MS = 2000
NONCE_BYTES = 16
# Version 1 (no version in its challenge) proved neither the node dialled nor the channel: relayable.
HANDSHAKE_VERSION = 2
# The one binding Python's ssl offers (not RFC 9266's exporter); under TLS 1.3, the client's Finished.
CHANNEL_BINDING = "tls-unique"

KIND_RAFT = 0
KIND_CONTROL = 1
KIND_REQUEST = 2  # cluster.replication.peer_requests: a request one node makes of another
KIND_REPLY = 3

FrameHandler = Callable[[str, int, bytes], None]


class HandshakeError(Exception):
    """The peer could not prove it knows the cluster secret, or spoke out of turn."""


@dataclass(frozen=True)
class Handshake:
    """What both proofs of one handshake cover: the dialling and the accepting node's names, the accepting
    side's (`server_nonce`) and the dialling side's (`client_nonce`) nonces, the dialler's incarnation, and
    the TLS channel binding of the connection (empty on plain TCP)."""

    dialler: str
    acceptor: str
    server_nonce: bytes
    client_nonce: bytes
    incarnation: str
    binding: bytes = b""

    def proof(self, secret: bytes, step: str) -> bytes:
        """The HMAC under `secret` of this handshake's fields for `step` ("hello" or "welcome"), encoded
        unambiguously (msgpack), so that one step's proof never passes for the other's."""
        fields = [HANDSHAKE_VERSION, step, self.dialler, self.acceptor, self.server_nonce, self.client_nonce]
        transcript = msgpack.packb(["quorumq-peer", *fields, self.incarnation, self.binding])
        return hmac.new(secret, transcript, hashlib.sha256).digest()

    def hello(self, secret: bytes) -> bytes:
        """The dialler's hello frame."""
        fields = [
            self.dialler,
            self.acceptor,
            self.client_nonce,
            self.incarnation,
            self.proof(secret, "hello"),
        ]
        return _frame(msgpack.packb(["hello", *fields]))

    def welcome(self, secret: bytes) -> bytes:
        """The accepting side's welcome frame."""
        return _frame(msgpack.packb(["welcome", self.acceptor, self.proof(secret, "welcome")]))


def _challenge_frame(server_nonce: bytes) -> bytes:
    """The accepting side's first frame: the handshake version and its nonce."""
    return _frame(msgpack.packb(["challenge", HANDSHAKE_VERSION, server_nonce]))


def _server_nonce(challenge: list) -> bytes:
    """The nonce of a challenge of this version; HandshakeError for anything else."""
    if len(challenge) == 2 and challenge[0] == "challenge":
        raise HandshakeError(
            f"peer speaks handshake version 1, this node {HANDSHAKE_VERSION}: upgrade every node"
        )
    if len(challenge) != 3 or challenge[:2] != ["challenge", HANDSHAKE_VERSION]:
        raise HandshakeError("expected a challenge")
    if not isinstance(challenge[2], bytes) or len(challenge[2]) != NONCE_BYTES:
        raise HandshakeError("malformed challenge")
    return challenge[2]


def _channel_binding(writer: asyncio.StreamWriter, tls: bool) -> bytes:
    """The connection's TLS channel binding (empty without TLS); HandshakeError when TLS is configured
    and the connection has none."""
    if not tls:
        return b""
    ssl_object = writer.get_extra_info("ssl_object")
    binding = ssl_object.get_channel_binding(CHANNEL_BINDING) if ssl_object is not None else None
    if not binding:
        raise HandshakeError("the TLS connection has no channel binding")
    return binding


def _give_up_unacknowledged(writer: asyncio.StreamWriter) -> None:
    """Let the kernel close the connection once sent data stays unacknowledged for UNACKED_TIMEOUT_MS."""
    sock = writer.get_extra_info("socket")
    if sock is not None and hasattr(socket, "TCP_USER_TIMEOUT"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, UNACKED_TIMEOUT_MS)


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    """One handshake frame's payload; a length over MAX_HANDSHAKE_FRAME_BYTES is refused before any of
    the payload is read."""
    (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
    if length > MAX_HANDSHAKE_FRAME_BYTES:
        raise HandshakeError(f"frame of {length} bytes exceeds {MAX_HANDSHAKE_FRAME_BYTES}")
    return await reader.readexactly(length)


async def _read_peer_frame(reader: asyncio.StreamReader) -> bytes | None:
    """One frame's payload from an authenticated peer; None for one over MAX_FRAME_BYTES, read past."""
    (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
    if length <= MAX_FRAME_BYTES:
        return await reader.readexactly(length)
    while length:
        length -= len(await reader.readexactly(min(length, SKIP_CHUNK_BYTES)))
    return None


def _frame(*payload: bytes) -> bytes:
    """The length-prefixed frame of the payload (its parts joined, each copied once)."""
    return b"".join((FRAME_HEADER.pack(sum(map(len, payload))), *payload))


def _kind_and_body_frame(kind: int, *body: bytes) -> bytes:
    """The frame of the msgpack array `[kind, body]` (`body` given in parts), copying the body once."""
    return _frame(array_header(2) + msgpack.packb(kind) + bin_header(sum(map(len, body))), *body)


def _has_room(writer: asyncio.StreamWriter) -> bool:
    """Whether the socket is open and holds less unsent data than the limit. (A connection closed under
    a pump that has not noticed yet takes no write: under uvloop that raises.)"""
    transport = writer.transport
    return not transport.is_closing() and transport.get_write_buffer_size() < WRITE_BUFFER_LIMIT


def _decode(payload: bytes) -> list:
    try:
        value = msgpack.unpackb(payload, raw=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise HandshakeError(f"undecodable frame: {exc}") from exc
    if not isinstance(value, list):
        raise HandshakeError("frame is not a list")
    return value


@dataclass
class _Peer:
    """Outbound state for one peer: per-group queues served round-robin, and the writer task."""

    name: str
    address: Address
    queues: OrderedDict[str, deque[bytes]]
    queued: int = 0
    wake: asyncio.Event | None = None
    task: asyncio.Task | None = None
    connected: bool = False
    writer: asyncio.StreamWriter | None = None  # while connected and pumping


class Transport:
    """Sends frames to peers by name and hands received frames to `on_frame(peer, kind, body)`."""

    def __init__(
        self,
        node: str,
        listen: Address,
        secret: str,
        on_frame: FrameHandler,
        *,
        tls: tuple[ssl.SSLContext, ssl.SSLContext] | None = None,
        incarnation: str = "",
        on_link_lost: Callable[[str], None] | None = None,
    ) -> None:
        """`tls` is (server, client) contexts for mutual TLS on the Raft port (plain TCP when None);
        `incarnation` is this node's, proved in every hello (it may be set later, before `start`)."""
        self.node = node
        self.incarnation = incarnation
        self._incarnations: dict[str, str] = {}
        self._tls = tls
        self.listen = listen
        self._secret = secret.encode()
        self._on_frame = on_frame
        self._on_link_lost = on_link_lost
        self._peers: dict[str, _Peer] = {}
        self._server: asyncio.base_events.Server | None = None
        self._inbound: dict[asyncio.Task, asyncio.StreamWriter] = {}
        self._inbound_from: dict[str, asyncio.StreamWriter] = {}  # each peer's newest inbound connection
        self._pending = PendingHandshakes()
        self.rejected_handshakes = 0
        self.skipped_frames = 0  # received over MAX_FRAME_BYTES

    async def start(self) -> None:
        """Listen on the Raft port."""
        self._server = await asyncio.start_server(
            self._accept,
            self.listen.host,
            self.listen.port,
            reuse_address=True,
            ssl=self._tls[0] if self._tls else None,
            ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S if self._tls else None,
        )

    async def stop(self) -> None:
        """Close the listener and every connection."""
        if self._server is not None:
            self._server.close()
        for peer in self._peers.values():
            if peer.task is not None:
                peer.task.cancel()
        tasks = [p.task for p in self._peers.values() if p.task is not None]
        for task in tasks:
            task.cancel()
        for writer in self._inbound.values():
            writer.close()
        await asyncio.gather(*tasks, *self._inbound, return_exceptions=True)

    def set_peer(self, name: str, address: Address) -> None:
        """Add a peer or change its address (the connection is re-made)."""
        if name == self.node:
            return
        peer = self._peers.get(name)
        if peer is not None and peer.address == address:
            return
        if peer is not None and peer.task is not None:
            peer.task.cancel()
        peer = _Peer(name, address, OrderedDict(), wake=asyncio.Event())
        self._peers[name] = peer
        peer.task = asyncio.get_running_loop().create_task(self._run_peer(peer))

    def remove_peer(self, name: str) -> None:
        """Forget a peer and close its connections (a forgotten node's frames are no longer taken)."""
        peer = self._peers.pop(name, None)
        if peer is not None and peer.task is not None:
            peer.task.cancel()
        inbound = self._inbound_from.pop(name, None)
        if inbound is not None:
            inbound.close()

    def peer_incarnation(self, name: str) -> str:
        """The incarnation `name` proved in its latest accepted hello ("" before one)."""
        return self._incarnations.get(name, "")

    def peers(self) -> dict[str, bool]:
        """Known peers and whether an outbound connection to each is up."""
        return {name: peer.connected for name, peer in self._peers.items()}

    def linked(self, name: str) -> bool:
        """Whether both connections with `name` are up: the one this node dialled and the peer's."""
        peer = self._peers.get(name)
        return peer is not None and peer.connected and name in self._inbound_from

    def _link_lost(self, name: str) -> None:
        if self._on_link_lost is not None:
            self._on_link_lost(name)

    def send(self, to: str, group: str, kind: int, *body: bytes) -> bool:
        """Queue a frame for a peer (`body` may come in parts); False when the peer is unknown, its
        queue is full, or the frame would hold more than MAX_FRAME_BYTES."""
        peer = self._peers.get(to)
        if peer is None or peer.queued >= MAX_QUEUED_PER_PEER:
            return False
        frame = _kind_and_body_frame(kind, *body)
        if len(frame) - FRAME_HEADER.size > MAX_FRAME_BYTES:
            log.error(
                "not sending %s a frame of %d bytes: peers take at most %d", to, len(frame), MAX_FRAME_BYTES
            )
            return False
        writer = peer.writer
        if not peer.queued and writer is not None and _has_room(writer):
            writer.write(frame)  # nothing waits and the socket keeps up: no need to queue
            return True
        queue = peer.queues.get(group)
        if queue is None:
            queue = peer.queues[group] = deque()
        queue.append(frame)
        peer.queued += 1
        assert peer.wake is not None
        peer.wake.set()
        return True

    def _next_frame(self, peer: _Peer) -> bytes | None:
        """Take one frame from the next non-empty group queue, rotating groups for fairness."""
        while peer.queues:
            group, queue = next(iter(peer.queues.items()))
            peer.queues.move_to_end(group)
            if queue:
                peer.queued -= 1
                frame = queue.popleft()
                if not queue:
                    del peer.queues[group]
                return frame
            del peer.queues[group]
        return None

    async def _run_peer(self, peer: _Peer) -> None:
        backoff = 0.05
        while True:
            try:
                # `asyncio.timeout`, not `wait_for`: in Python 3.11 a cancellation (a stop) arriving as the
                # dial finishes is lost under `wait_for`, and this loop would dial for ever.
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    reader, writer = await asyncio.open_connection(
                        peer.address.host, peer.address.port, ssl=self._tls[1] if self._tls else None
                    )
                _give_up_unacknowledged(writer)
            except (OSError, TimeoutError):
                self._drop_queued(peer)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
                continue
            try:
                async with asyncio.timeout(HANDSHAKE_TIMEOUT_S):
                    await self._dial_handshake(peer, reader, writer)
                peer.connected = True
                backoff = 0.05
                await self._pump(peer, reader, writer)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, HandshakeError) as exc:
                log.info("connection to %s lost: %s", peer.name, exc)
            finally:
                was_connected, peer.connected = peer.connected, False
                writer.close()
                self._drop_queued(peer)
                if was_connected:
                    self._link_lost(peer.name)
            await asyncio.sleep(backoff)

    @staticmethod
    def _drop_queued(peer: _Peer) -> None:
        peer.queues.clear()
        peer.queued = 0

    async def _pump(self, peer: _Peer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert peer.wake is not None
        closed = asyncio.ensure_future(reader.read(1))  # the dialled side never writes after handshake
        peer.writer = writer
        try:
            while not closed.done():
                frame = self._next_frame(peer)
                if frame is None:
                    peer.wake.clear()
                    waiter = asyncio.ensure_future(peer.wake.wait())
                    try:
                        await asyncio.wait({waiter, closed}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        waiter.cancel()  # also when this task is cancelled (the peer removed)
                    continue
                writer.write(frame)
                if not _has_room(writer):
                    await writer.drain()
            raise OSError("peer closed the connection")
        finally:
            peer.writer = None
            closed.cancel()

    async def _dial_handshake(
        self, peer: _Peer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        server_nonce = _server_nonce(_decode(await _read_frame(reader)))
        binding = _channel_binding(writer, self._tls is not None)
        shake = Handshake(
            self.node, peer.name, server_nonce, os.urandom(NONCE_BYTES), self.incarnation, binding
        )
        writer.write(shake.hello(self._secret))
        await writer.drain()
        answer = _decode(await _read_frame(reader))
        if len(answer) != 3 or answer[0] != "welcome" or answer[1] != peer.name:
            raise HandshakeError(f"peer at {peer.address} is not {peer.name}")
        expected = shake.proof(self._secret, "welcome")
        if not isinstance(answer[2], bytes) or not hmac.compare_digest(answer[2], expected):
            raise HandshakeError(f"peer {peer.name} failed to prove the cluster secret")

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if not self._pending.admit(writer, source_key(writer.get_extra_info("peername", ("",))[0])):
            writer.close()  # its source already has as many handshakes under way as it may
            return
        self._inbound[task] = writer
        name: str | None = None
        try:
            name = await asyncio.wait_for(self._accept_handshake(reader, writer), HANDSHAKE_TIMEOUT_S)
            self._pending.settled(writer)
            if name not in self._peers:
                raise HandshakeError(f"{name!r} was removed while its handshake was under way")
            older = self._inbound_from.get(name)
            if older is not None:
                older.close()  # the peer dials one connection at a time: the older one is dead
            self._inbound_from[name] = writer
            while True:
                payload = await _read_peer_frame(reader)
                if payload is None:
                    self.skipped_frames += 1
                    log.error("dropped a frame of more than %d bytes from %s", MAX_FRAME_BYTES, name)
                    continue
                frame = _decode(payload)
                if len(frame) != 2 or not isinstance(frame[0], int) or not isinstance(frame[1], bytes):
                    raise HandshakeError("malformed frame")
                if self._inbound_from.get(name) is not writer:
                    break  # removed (or dialled again): what it had buffered is not taken
                self._on_frame(name, frame[0], frame[1])
        except HandshakeError as exc:
            self.rejected_handshakes += 1
            log.warning("rejected peer connection: %s", exc)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            self._pending.settled(writer)
            self._inbound.pop(task, None)
            if name is not None:
                if self._inbound_from.get(name) is writer:
                    del self._inbound_from[name]
                self._link_lost(name)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _accept_handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        server_nonce = os.urandom(NONCE_BYTES)
        writer.write(_challenge_frame(server_nonce))
        await writer.drain()
        hello = _decode(await _read_frame(reader))
        if len(hello) != 6 or hello[0] != "hello":
            raise HandshakeError(f"expected a hello of handshake version {HANDSHAKE_VERSION}")
        name, to, client_nonce, incarnation, proof = hello[1:]
        if not all(isinstance(v, str) for v in (name, to, incarnation)) or not isinstance(proof, bytes):
            raise HandshakeError("malformed hello")
        if not isinstance(client_nonce, bytes) or len(client_nonce) != NONCE_BYTES:
            raise HandshakeError("malformed hello")
        if to != self.node:
            raise HandshakeError(
                f"{name!r} meant to dial {to!r}, not {self.node!r}: relayed, or a moved address"
            )
        binding = _channel_binding(writer, self._tls is not None)
        shake = Handshake(name, self.node, server_nonce, client_nonce, incarnation, binding)
        if not hmac.compare_digest(proof, shake.proof(self._secret, "hello")):
            raise HandshakeError(f"{name!r} failed to prove the cluster secret over this connection")
        if name not in self._peers:
            raise HandshakeError(f"{name!r} is not a known member of this cluster")
        writer.write(shake.welcome(self._secret))
        await writer.drain()
        self._incarnations[name] = incarnation
        return name
