"""A node assertion is checked again once the body it was made for has arrived: one that expired while
its body was read is refused as expired, whichever requests the node served meanwhile (the replay guard
forgets a nonce once its assertion expired, so it cannot be the judge of a late one)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from in_process_node import in_process_node
from support.eventually import eventually

from cluster import steady_clock
from cluster.security.peer_auth import ASSERTION_TTL_MS, NODE_AUTH_HEADER, body_digest, sign_assertion

SECRET = "in-process-test-secret"  # in_process_node's
NODE = "n1"


class MovableClock:
    """The node's steady clock, moved ahead on demand; counts its readings."""

    def __init__(self) -> None:
        self.ahead_ns = 0
        self.readings = 0

    def wall_ns(self) -> int:
        self.readings += 1
        return time.time_ns() + self.ahead_ns

    def monotonic_ns(self) -> int:
        return time.monotonic_ns() + self.ahead_ns


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[MovableClock]:
    movable = MovableClock()
    monkeypatch.setattr(
        steady_clock, "_CLOCK", steady_clock.SteadyClock(movable.wall_ns, movable.monotonic_ns)
    )
    yield movable


def _assertion(method: str, target: str, body: bytes) -> dict[str, str]:
    value = sign_assertion(
        SECRET, "@node", method, target, body_digest(body), steady_clock.steady_wall_ms(), to=NODE
    )
    return {NODE_AUTH_HEADER: value, "Content-Type": "application/json"}


async def test_rule_an_assertion_that_expired_while_its_body_was_read_is_refused_as_expired(
    tmp_path: Path, clock: MovableClock
) -> None:
    async with in_process_node(tmp_path) as api:
        await api.declare("slow-body")
        target = "/api/queues/slow-body/messages"
        body = b'{"messages": [{"body": "late"}]}'
        headers = _assertion("POST", target, body)

        async def slowly() -> AsyncIterator[bytes]:
            read_before = clock.readings
            yield body[:10]
            # The node read its clock for the assertion (before the body): now the assertion expires...
            await eventually(lambda: clock.readings > read_before, "the assertion checked")
            clock.ahead_ns += (ASSERTION_TTL_MS + 2_000) * 1_000_000
            # ...and another request moves the node's replay guard past its expiry.
            other = _assertion("GET", "/api/queues/slow-body", b"")
            status, _ = await api.call("GET", "/api/queues/slow-body", headers=other)
            assert status == 200
            yield body[10:]

        status, answer = await api.call("POST", target, data=slowly(), headers=headers)
        assert status == 401, answer
        assert "expired while its body was read" in answer["reason"], answer
        status, queue = await api.call("GET", "/api/queues/slow-body")
        assert queue["messages"] == 0
