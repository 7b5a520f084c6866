"""Waiting for something a test cannot be told about, by polling it."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")


@overload
async def eventually(
    check: Callable[[], Awaitable[T]], what: str, *, timeout: float = ..., interval: float = ...
) -> T: ...
@overload
async def eventually(
    check: Callable[[], T], what: str, *, timeout: float = ..., interval: float = ...
) -> T: ...
async def eventually(
    check: Callable[[], Any], what: str, *, timeout: float = 20.0, interval: float = 0.01
) -> Any:
    """Call `check` (plain or async) every `interval` seconds until it returns something truthy, and
    return that. An exception it raises is a miss like a falsy answer; after `timeout` seconds fail
    with `what` and the last miss."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            answer = check()
            found = await answer if inspect.isawaitable(answer) else answer
        except Exception as error:
            miss: object = error
        else:
            if found:
                return found
            miss = found
        if loop.time() >= deadline:
            cause = miss if isinstance(miss, Exception) else None
            raise AssertionError(
                f"timed out after {timeout:g} s waiting for {what}; last: {miss!r}"
            ) from cause
        await asyncio.sleep(interval)


def eventually_sync(check: Callable[[], T], what: str, *, timeout: float = 20.0, interval: float = 0.01) -> T:
    """`eventually` for code without an event loop (sync tests, Spark's driver). `check` runs in a
    worker thread, so it may run an event loop of its own (`asyncio.run`, a `SyncClient`)."""

    async def in_a_thread() -> T:
        return await asyncio.to_thread(check)

    return asyncio.run(eventually(in_a_thread, what, timeout=timeout, interval=interval))
