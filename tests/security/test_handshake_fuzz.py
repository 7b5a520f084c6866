"""Hypothesis on the Raft port's handshake, over real sockets: whatever an unauthenticated peer sends (raw
bytes, frames of arbitrary msgpack, hellos with arbitrary fields or proofs made without the secret,
length prefixes that lie), the accepting node neither fails nor welcomes it nor hands on a frame, and a
real peer still connects afterwards; whatever a dialled address answers, the dialling node gives up with
an error its connection loop handles.

Examples per test: QUORUMQ_FUZZ_EXAMPLES (default 200 in CI; see docs/operate/security.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.eventually import eventually

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.replication.transport import (
    FRAME_HEADER,
    HANDSHAKE_TIMEOUT_S,
    HANDSHAKE_VERSION,
    KIND_RAFT,
    Handshake,
    HandshakeError,
    Transport,
    _Peer,
)

EXAMPLES = int(os.environ.get("QUORUMQ_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SECRET = "fuzz-secret"
T = TypeVar("T")

Speech = Callable[[bytes], bytes]  # what the peer sends, given the node's challenge nonce

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**64 - 1),
        st.text(max_size=20),
        st.binary(max_size=40),
    ),
    lambda inner: st.lists(inner, max_size=6),
    max_leaves=12,
)


def _frame(payload: bytes) -> bytes:
    return FRAME_HEADER.pack(len(payload)) + payload


def _fixed(data: bytes) -> Speech:
    return lambda _nonce: data


def _hello(secret: str, name: str, to: str, incarnation: str, client_nonce: bytes) -> Speech:
    """A hello by `name`, meaning to dial `to`, proved with `secret` over the node's real challenge (the
    accepting node is `b`, which knows only `a`: with the right secret, never `a` dialling `b`)."""

    def speak(server_nonce: bytes) -> bytes:
        return Handshake(name, to, server_nonce, client_nonce, incarnation).hello(secret.encode())

    return speak


def _version1_hello(client_nonce: bytes) -> Speech:
    """A hello of handshake version 1 by `a`, with the right secret (it names no node dialled)."""

    def speak(server_nonce: bytes) -> bytes:
        proved = b"\x00".join([b"dial", server_nonce, client_nonce, b"a"])
        proof = hmac.new(SECRET.encode(), proved, hashlib.sha256).digest()
        return _frame(msgpack.packb(["hello", "a", client_nonce, proof]))

    return speak


names = st.one_of(st.sampled_from(["a", "b", "intruder", ""]), st.text(max_size=10))
speeches = st.one_of(
    st.binary(max_size=200).map(_fixed),
    values.map(lambda v: _fixed(_frame(msgpack.packb(v)))),
    st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=100)).map(
        lambda lie: _fixed(FRAME_HEADER.pack(lie[0]) + lie[1])
    ),
    st.lists(st.one_of(st.just("hello"), values), max_size=6).map(lambda v: _fixed(_frame(msgpack.packb(v)))),
    st.builds(
        _hello,
        st.sampled_from(["wrong-secret", ""]),
        names,
        names,
        st.text(max_size=10),
        st.binary(max_size=32),
    ),
    st.builds(
        _hello,
        st.just(SECRET),
        names.filter(lambda n: n != "a"),
        names,
        st.text(max_size=10),
        st.binary(max_size=32),
    ),
    st.builds(  # a genuine hello of `a`, meant for another node: what a relay would pass on
        _hello,
        st.just(SECRET),
        st.just("a"),
        names.filter(lambda n: n != "b"),
        st.text(max_size=10),
        st.binary(max_size=32),
    ),
    st.binary(min_size=16, max_size=16).map(_version1_hello),
)


def _ignore(peer: str, kind: int, body: bytes) -> None:
    """A frame handler for a transport whose frames the test does not look at."""


class Listening:
    """A transport `b` on its own event loop that knows one peer, `a` (not listening yet)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        port_a, port_b = free_ports(2)
        self.delivered: list[tuple[str, int, bytes]] = []  # the frames `b` hands on
        self.address_a = Address("127.0.0.1", port_a)
        self.b = Transport("b", Address("127.0.0.1", port_b), SECRET, self._deliver)
        self.run(self.b.start())
        self.run(self._know_a())

    async def _know_a(self) -> None:
        self.b.set_peer("a", self.address_a)

    def _deliver(self, peer: str, kind: int, body: bytes) -> None:
        self.delivered.append((peer, kind, body))

    def run(self, coroutine: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        self.run(self.b.stop())
        self.loop.close()


@pytest.fixture(scope="module")
def listening() -> Iterator[Listening]:
    node = Listening()
    yield node
    node.close()


async def _speak_to(address: Address, speech: Speech) -> list[Any]:
    """Dial, take the challenge, say `speech`, close our side; every frame the node answered."""
    reader, writer = await asyncio.open_connection(address.host, address.port)
    try:
        (length,) = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
        _, _, server_nonce = msgpack.unpackb(await reader.readexactly(length))
        writer.write(speech(server_nonce))
        writer.write_eof()
        await writer.drain()
        answered = await asyncio.wait_for(reader.read(), 2 * HANDSHAKE_TIMEOUT_S)
    except ConnectionError:
        return []
    finally:
        writer.close()
    frames = []
    while len(answered) >= FRAME_HEADER.size:
        (length,) = FRAME_HEADER.unpack(answered[: FRAME_HEADER.size])
        frames.append(msgpack.unpackb(answered[FRAME_HEADER.size : FRAME_HEADER.size + length]))
        answered = answered[FRAME_HEADER.size + length :]
    return frames


@FUZZ
@given(st.lists(speeches, min_size=1, max_size=3))
def test_an_unauthenticated_peer_is_never_welcomed_and_never_delivers(
    listening: Listening, said: list[Speech]
) -> None:
    for speech in said:
        answered = listening.run(_speak_to(listening.b.listen, speech))
        assert not any(isinstance(f, list) and f and f[0] == "welcome" for f in answered), answered
    assert listening.delivered == []
    assert listening.b.peer_incarnation("a") == ""


def test_after_the_fuzzing_a_real_peer_connects_and_delivers(listening: Listening) -> None:
    a = Transport("a", listening.address_a, SECRET, _ignore, incarnation="inc-a")

    def sent_until_delivered() -> bool:
        a.send("b", "g1", KIND_RAFT, b"after the fuzz")  # frames sent before the connection is up are dropped
        return bool(listening.delivered)

    async def until_delivered() -> None:
        await a.start()
        a.set_peer("b", listening.b.listen)
        await eventually(sent_until_delivered, "a frame delivered", timeout=30, interval=0.05)
        await a.stop()

    listening.run(until_delivered())
    assert listening.delivered[0] == ("a", KIND_RAFT, b"after the fuzz")


async def _dial_fake_node(answer: bytes) -> BaseException | None:
    """Let a transport dial a listener that answers `answer` and hangs up; what its handshake raised."""

    async def fake(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(fake, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    dialler = Transport("a", Address("127.0.0.1", free_ports(1)[0]), SECRET, _ignore)
    peer = _Peer("b", Address("127.0.0.1", port), OrderedDict())
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        await asyncio.wait_for(dialler._dial_handshake(peer, reader, writer), 2 * HANDSHAKE_TIMEOUT_S)
    except BaseException as exc:
        return exc
    finally:
        writer.close()
        server.close()
        await server.wait_closed()
    return None


challenges = st.one_of(
    st.just(["challenge", HANDSHAKE_VERSION, b"n" * 16]),
    st.just(["challenge", b"n" * 16]),  # version 1
    st.lists(values, max_size=4).map(lambda v: ["challenge", *v]),
).map(lambda c: _frame(msgpack.packb(c)))
answers = st.one_of(
    st.binary(max_size=200),
    values.map(lambda v: _frame(msgpack.packb(v))),
    st.tuples(challenges, st.lists(values, max_size=3)).map(
        lambda c: c[0] + b"".join(_frame(msgpack.packb(v)) for v in c[1])
    ),
    st.tuples(challenges, st.text(max_size=10), st.binary(max_size=40)).map(
        lambda w: w[0] + _frame(msgpack.packb(["welcome", *w[1:]]))
    ),
)


@FUZZ
@given(answers)
def test_whatever_a_dialled_address_answers_the_handshake_fails_as_the_dialler_expects(answer: bytes) -> None:
    raised = asyncio.run(_dial_fake_node(answer))
    assert isinstance(raised, HandshakeError | asyncio.IncompleteReadError | OSError | TimeoutError), raised
