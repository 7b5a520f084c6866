"""Helpers for the Spark tests: publishing, reading the parquet output, waiting on the queue."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from quorumq import Client


def run(nodes: Sequence[str], action: Callable[[Client], Any], **client: Any) -> Any:
    """Run `action(client)` on a fresh client (Client keyword arguments `client`) and event loop."""

    async def go() -> Any:
        async with Client(list(nodes), timeout=30.0, **client) as connected:
            return await action(connected)

    return asyncio.run(go())


def order_body(number: int) -> str:
    """The JSON body of order `number`: one item of price 1.5 and quantity 1-5."""
    return json.dumps({"order": f"o-{number}", "items": [{"price": 1.5, "qty": number % 5 + 1}]})


def publish_orders(nodes: Sequence[str], queue: str, count: int, **client: Any) -> list[int]:
    """Declare `queue` and publish `count` order messages; returns their ids."""

    async def go(connected: Client) -> list[int]:
        await connected.declare(queue)
        bodies = [order_body(i) for i in range(count)]
        return await connected.publish_all(queue, bodies, batch=200)

    return run(nodes, go, **client)


def queue_stats(nodes: Sequence[str], queue: str, **client: Any) -> dict[str, Any]:
    return run(nodes, lambda connected: connected.queue(queue), **client)


def stream_to_parquet(spark, options: dict[str, str], tmp_path: Path):  # type: ignore[no-untyped-def]
    """A writeStream of format("quorumq") with `options` into parquet at tmp_path/out (not started)."""
    reader = spark.readStream.format("quorumq")
    for key, value in options.items():
        reader = reader.option(key, value)
    return (
        reader.load()
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
    )
