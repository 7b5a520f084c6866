"""Helpers for the Spark tests: publishing, reading the parquet output, waiting on the queue."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from api.client import QuorumqClient


def run(nodes: Sequence[str], action: Callable[[QuorumqClient], Any]) -> Any:
    """Run `action(client)` on a fresh client and event loop."""

    async def go() -> Any:
        async with QuorumqClient(list(nodes), timeout=30.0) as client:
            return await action(client)

    return asyncio.run(go())


def order_body(number: int) -> str:
    """The JSON body of order `number`: one item of price 1.5 and quantity 1-5."""
    return json.dumps({"order": f"o-{number}", "items": [{"price": 1.5, "qty": number % 5 + 1}]})


def publish_orders(nodes: Sequence[str], queue: str, count: int) -> list[int]:
    """Declare `queue` and publish `count` order messages; returns their ids."""

    async def go(client: QuorumqClient) -> list[int]:
        await client.declare(queue)
        bodies = [order_body(i) for i in range(count)]
        return await client.publish_all(queue, bodies, batch=200)

    return run(nodes, go)


def queue_stats(nodes: Sequence[str], queue: str) -> dict[str, Any]:
    return run(nodes, lambda client: client.queue(queue))


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `condition` until it holds; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
