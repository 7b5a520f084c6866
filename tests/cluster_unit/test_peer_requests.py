"""Requests between nodes over the peer transport (`cluster/replication/peer_requests.py`), on real transports
over TCP: answered by the peer's server, many in flight at once; made only of a peer that said it serves them
(a node of an earlier version ignores the frame kind) while both connections are up; given up with
`outcome_unknown` when a connection closes after the request was sent."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.eventually import eventually

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.errors import NotLeader, OutcomeUnknown
from cluster.replication.peer_requests import PeerRequests
from cluster.replication.transport import KIND_REPLY, KIND_REQUEST, Transport

UNTIL_S = 10.0
FIRST_IDS = itertools.count(1, 1 << 32)  # each process its own range, as a node's random start gives


class Side:
    """One node: its transport and its peer requests, wired as `cluster.node.Node` wires them."""

    def __init__(self, name: str, port: int) -> None:
        self.transport = Transport(
            name, Address("127.0.0.1", port), "s3cret", self._frame, on_link_lost=self._lost
        )
        self.requests = PeerRequests(self.transport, next(FIRST_IDS))

    def _frame(self, peer: str, kind: int, body: bytes) -> None:
        if kind in (KIND_REQUEST, KIND_REPLY):
            self.requests.on_frame(peer, kind, body)

    def _lost(self, peer: str) -> None:
        self.requests.link_lost(peer)


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Side, Side]]:
    """`a` calls `b`, which serves requests by echoing them; both connections up."""
    port_a, port_b = free_ports(2)
    a, b = Side("a", port_a), Side("b", port_b)

    async def echo(peer: str, value: Any) -> Any:
        return [peer, value]

    b.requests.serve(echo)
    await a.transport.start()
    await b.transport.start()
    a.transport.set_peer("b", b.transport.listen)
    b.transport.set_peer("a", a.transport.listen)
    a.requests.on_control("b", b.requests.announcement())  # as b's control frames say each second
    await eventually(lambda: a.requests.can_call("b"), "a to call b", timeout=UNTIL_S)
    yield a, b
    await a.requests.stop()
    await b.requests.stop()
    await a.transport.stop()
    await b.transport.stop()


async def test_requests_in_flight_together_are_each_answered_by_the_peer(pair: tuple[Side, Side]) -> None:
    a, _ = pair
    answers = await asyncio.wait_for(asyncio.gather(*(a.requests.call("b", n) for n in range(200))), UNTIL_S)
    assert answers == [["a", n] for n in range(200)]


async def test_a_peer_that_did_not_say_it_serves_requests_is_not_called() -> None:
    port_a, port_b = free_ports(2)
    a, b = Side("a", port_a), Side("b", port_b)  # b serves nothing: a node of an earlier version
    await a.transport.start()
    await b.transport.start()
    try:
        a.transport.set_peer("b", b.transport.listen)
        b.transport.set_peer("a", a.transport.listen)
        await eventually(lambda: a.transport.linked("b"), "a linked to b", timeout=UNTIL_S)
        assert b.requests.announcement() == {}
        a.requests.on_control("b", {"queue_codec": 1})  # what an earlier version says
        assert not a.requests.can_call("b")
        with pytest.raises(NotLeader) as refused:
            a.requests.call("b", "anything")
        assert (refused.value.code, refused.value.leader) == ("no_leader", "b")  # nothing was sent
    finally:
        await a.transport.stop()
        await b.transport.stop()


async def test_a_call_is_given_up_as_outcome_unknown_when_the_link_closes_after_it_was_sent() -> None:
    port_a, port_b = free_ports(2)
    a, b = Side("a", port_a), Side("b", port_b)
    received = asyncio.Event()

    async def never_answers(peer: str, value: Any) -> Any:
        received.set()
        await asyncio.Event().wait()

    b.requests.serve(never_answers)
    await a.transport.start()
    await b.transport.start()
    try:
        a.transport.set_peer("b", b.transport.listen)
        b.transport.set_peer("a", a.transport.listen)
        a.requests.on_control("b", b.requests.announcement())
        await eventually(lambda: a.requests.can_call("b"), "a to call b", timeout=UNTIL_S)
        answer = a.requests.call("b", "publish this")
        await asyncio.wait_for(received.wait(), UNTIL_S)
        await b.requests.stop()
        await b.transport.stop()  # the peer's process goes away: both connections close
        with pytest.raises(OutcomeUnknown) as lost:
            await asyncio.wait_for(answer, UNTIL_S)
        assert (lost.value.code, lost.value.leader) == ("outcome_unknown", "b")
        assert not a.requests.can_call("b")  # what b said is forgotten with the link
    finally:
        await a.requests.stop()
        await a.transport.stop()


async def test_a_malformed_frame_is_dropped_and_the_link_keeps_serving(pair: tuple[Side, Side]) -> None:
    a, _ = pair
    assert a.transport.send("b", "peer-requests", KIND_REQUEST, b"\xc1")  # not msgpack
    assert a.transport.send("b", "peer-requests", KIND_REQUEST, b"\x92\xa1x\x01")  # ["x", 1]: no integer id
    assert await asyncio.wait_for(a.requests.call("b", "after"), UNTIL_S) == ["a", "after"]


async def test_rule_a_reply_to_a_previous_process_of_the_caller_does_not_answer_its_new_call() -> None:
    """The caller restarts (same name, same port) while the peer still serves a call of its previous
    process: that call's late reply reaches the new process, whose own call must not take it."""
    port_a, port_b = free_ports(2)
    b = Side("b", port_b)
    held: list[asyncio.Future[None]] = []  # one per request b serves, set when the test lets it answer

    async def held_echo(peer: str, value: Any) -> Any:
        release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        held.append(release)
        await release
        return value

    b.requests.serve(held_echo)
    await b.transport.start()
    b.transport.set_peer("a", Address("127.0.0.1", port_a))
    previous = Side("a", port_a)
    await previous.transport.start()
    previous.transport.set_peer("b", b.transport.listen)
    previous.requests.on_control("b", b.requests.announcement())
    await eventually(
        lambda: previous.requests.can_call("b"), "the previous process to call b", timeout=UNTIL_S
    )
    lost = previous.requests.call("b", "asked by the previous process")
    await eventually(lambda: len(held) == 1, "one request held", timeout=UNTIL_S)
    await previous.requests.stop()
    await previous.transport.stop()  # the caller's process goes away; b still serves its call
    with pytest.raises(OutcomeUnknown):
        await asyncio.wait_for(lost, UNTIL_S)
    new = Side("a", port_a)
    try:
        await new.transport.start()
        new.transport.set_peer("b", b.transport.listen)
        new.requests.on_control("b", b.requests.announcement())
        await eventually(lambda: new.requests.can_call("b"), "the new process to call b", timeout=UNTIL_S)
        answer = new.requests.call("b", "asked by the new process")
        await eventually(lambda: len(held) == 2, "two requests held", timeout=UNTIL_S)
        for release in held:  # the previous process's reply goes first, on the link to the new one
            release.set_result(None)
        assert await asyncio.wait_for(answer, UNTIL_S) == "asked by the new process"
    finally:
        await new.requests.stop()
        await b.requests.stop()
        await new.transport.stop()
        await b.transport.stop()
