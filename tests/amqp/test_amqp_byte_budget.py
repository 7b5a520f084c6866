"""A connection's budget of unconfirmed message bodies (`api.amqp.byte_budget`): past its limit a
channel waits for room, and room comes back as confirms give bytes back."""

from __future__ import annotations

import asyncio

from api.amqp.byte_budget import ByteBudget


async def test_taking_past_the_limit_waits_until_enough_is_given_back() -> None:
    budget = ByteBudget(limit=100)
    budget.take(100)
    await asyncio.wait_for(budget.room(), 1)  # at the limit: room still
    budget.take(1)
    waiting = asyncio.ensure_future(budget.room())
    await asyncio.sleep(0)
    assert not waiting.done()
    budget.give(1)
    await asyncio.wait_for(waiting, 1)
