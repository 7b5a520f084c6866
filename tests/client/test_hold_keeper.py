"""HoldKeeper: what it keeps is touched in one request every half hold, until nothing is kept or the
server refuses touches."""

import asyncio

from quorumq.errors import ConsumerEndedError, UnavailableError
from quorumq.hold_keeper import HoldKeeper


class Server:
    """Answers touches with a hold of `hold_ms`, or raises the errors queued in `failures` first."""

    def __init__(self, hold_ms: int) -> None:
        self.hold_ms = hold_ms
        self.touched: list[list[int]] = []
        self.failures: list[Exception] = []
        self.answered = asyncio.Event()

    async def touch(self, ids: list[int]) -> int:
        self.touched.append(ids)
        self.answered.set()
        if self.failures:
            raise self.failures.pop(0)
        return self.hold_ms


async def rounds(server: Server, count: int) -> None:
    for _ in range(count):
        server.answered.clear()
        await asyncio.wait_for(server.answered.wait(), 5)


async def test_what_is_kept_is_touched_in_one_request_every_half_hold() -> None:
    server = Server(hold_ms=100)
    keeper = HoldKeeper(server.touch, hold_ms=100)
    keeper.keep([3, 1])
    async with keeper.holding(2):
        await rounds(server, 2)
    assert server.touched[-1] == [1, 2, 3]
    keeper.let_go([1, 3])
    touches = len(server.touched)
    await asyncio.sleep(0.2)  # two intervals pass with nothing kept
    assert len(server.touched) == touches


async def test_an_id_kept_twice_stays_kept_until_let_go_twice() -> None:
    server = Server(hold_ms=100)
    keeper = HoldKeeper(server.touch, hold_ms=100)
    keeper.keep([7])
    async with keeper.holding(7):  # waiting in a batch, and inside process()
        pass
    await rounds(server, 1)
    assert server.touched[-1] == [7]
    keeper.let_go([7])


async def test_an_unknown_hold_is_learned_from_the_first_touch() -> None:
    server = Server(hold_ms=120)
    keeper = HoldKeeper(server.touch)
    async with keeper.holding(1):
        await rounds(server, 1)
        assert keeper.hold_ms == 120


async def test_a_refused_touch_stops_the_touching_and_one_unanswered_is_tried_again() -> None:
    server = Server(hold_ms=100)
    server.failures = [
        UnavailableError(503, "no_leader", "electing"),
        ConsumerEndedError(410, "consumer_timeout", ""),
    ]
    keeper = HoldKeeper(server.touch, hold_ms=100)
    async with keeper.holding(1):
        await rounds(server, 2)
        await asyncio.sleep(0.2)  # two more intervals: no more touches after the 410
        assert len(server.touched) == 2
