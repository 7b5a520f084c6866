"""The client's one retry policy (tenacity): what a request retries, how long it waits, and until when.

A request is retried after a 503 (no leader yet, a leader that moved, a node cut off from the others) and,
when it is safe to send again (reads, deduplicated publishes), after it got no answer; a node that refused
the connection is left for the next one at once. Between other attempts the wait is full jitter: random
between 0 and BACKOFF_START_S * 2**(attempt - 1), at most BACKOFF_MAX_S. No attempt starts, and no wait
ends, past the request's deadline.
"""

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import NoReturn, TypeVar, cast

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_random_exponential

from quorumq.errors import QuorumqError

BACKOFF_START_S = 0.02
BACKOFF_MAX_S = 0.5

T = TypeVar("T")

_full_jitter = wait_random_exponential(multiplier=BACKOFF_START_S, max=BACKOFF_MAX_S)


class RetryableFailure(Exception):
    """An attempt failed in a way the next attempt may not. `error` is what the request raises if no time
    is left for another; `at_once` when the request was certainly not sent (no connection), so the next
    node is tried without waiting."""

    def __init__(self, error: QuorumqError, *, at_once: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.at_once = at_once


def wait_before_retry(state: RetryCallState) -> float:
    """No wait after a refused connection; full jitter after any other retryable failure."""
    failure = state.outcome.exception() if state.outcome is not None else None
    if isinstance(failure, RetryableFailure) and failure.at_once:
        return 0.0
    return _full_jitter(state)


async def retrying(attempt: Callable[[], Awaitable[T]], deadline: float) -> T:
    """`await attempt()` until it returns or raises anything but RetryableFailure; when the next wait would
    end at or past `deadline` (the running loop's time), raise the last failure's error instead."""
    loop = asyncio.get_running_loop()
    policy = AsyncRetrying(
        retry=retry_if_exception_type(RetryableFailure),
        wait=wait_before_retry,
        stop=lambda state: loop.time() + state.upcoming_sleep >= deadline,
        retry_error_callback=_raise_last_error,
    )
    return await policy(attempt)


def _raise_last_error(state: RetryCallState) -> NoReturn:
    """Called only when `stop` ended the retries, so after a RetryableFailure."""
    failure = cast(Future, state.outcome).exception()
    raise cast(RetryableFailure, failure).error from None
