"""The client's one retry policy: what a request retries, how long it waits, and until when.

A request is retried after a 503 (no leader yet, a leader that moved, a node cut off from the others, a
resource alarm, an overloaded leader) and, when it is safe to send again (reads, deduplicated
publishes), after it got no answer; a node that refused the connection is left for the next one at once.
A publish the node held back (a resource alarm, which lasts until consumers drained or space was freed;
an overloaded leader, which says when to come back) waits its `pause_s`, and up to half as long again,
so that publishers held back together do not come back in step. Between other attempts the wait is full
jitter: random between 0 and BACKOFF_START_S * 2**(attempt - 1), at most
BACKOFF_MAX_S. No attempt starts, and no wait
ends, past the request's deadline. (Hand-written rather than tenacity: the client depends only on aiohttp
and msgpack; docs/decisions/0013-client-distribution.md.)
"""

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from quorumq.errors import QuorumqError

BACKOFF_START_S = 0.02
BACKOFF_MAX_S = 0.5
_MAX_DOUBLINGS = 30
"""Past this many doublings the ceiling is BACKOFF_MAX_S anyway; the cap keeps 2**n a small number."""

T = TypeVar("T")


class RetryableFailure(Exception):
    """An attempt failed in a way the next attempt may not. `error` is what the request raises if no time
    is left for another; `at_once` when the request was certainly not sent (no connection), so the next
    node is tried without waiting; `pause_s` when the node held the request back (a resource alarm, an
    overloaded leader): the next attempt waits at least that long."""

    def __init__(self, error: QuorumqError, *, at_once: bool = False, pause_s: float = 0.0) -> None:
        super().__init__(str(error))
        self.error = error
        self.at_once = at_once
        self.pause_s = pause_s


def wait_before_retry(attempt_number: int, failure: RetryableFailure) -> float:
    """How long to wait after attempt `attempt_number` (from 1) failed with `failure`: nothing after a
    refused connection, its pause and up to half as long again, else full jitter."""
    if failure.at_once:
        return 0.0
    if failure.pause_s:
        return random.uniform(failure.pause_s, 1.5 * failure.pause_s)
    ceiling = BACKOFF_START_S * 2 ** min(attempt_number - 1, _MAX_DOUBLINGS)
    return random.uniform(0, min(ceiling, BACKOFF_MAX_S))


async def retrying(attempt: Callable[[], Awaitable[T]], deadline: float) -> T:
    """`await attempt()` until it returns or raises anything but RetryableFailure; when the next wait would
    end at or past `deadline` (the running loop's time), raise the last failure's error instead."""
    loop = asyncio.get_running_loop()
    attempt_number = 0
    while True:
        attempt_number += 1
        try:
            return await attempt()
        except RetryableFailure as failure:
            wait = wait_before_retry(attempt_number, failure)
            if loop.time() + wait >= deadline:
                raise failure.error from None
        await asyncio.sleep(wait)
