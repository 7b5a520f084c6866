"""Blocking calls to the cluster for Spark's synchronous reader and writer methods.

Each call runs on its own short-lived event loop with its own client, so nothing unpicklable (sessions,
sockets, loops) is ever kept on a reader or writer object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from api.client import QuorumqClient

T = TypeVar("T")
REQUEST_TIMEOUT_S = 30.0


def call(nodes: Sequence[str], action: Callable[[QuorumqClient], Awaitable[T]]) -> T:
    """Run `action(client)` against the cluster and return its result."""

    async def run() -> T:
        async with QuorumqClient(list(nodes), timeout=REQUEST_TIMEOUT_S) as client:
            return await action(client)

    return asyncio.run(run())
