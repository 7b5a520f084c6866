"""The client's retry policy (quorumq.retry): full-jitter waits, none after a refused connection, and
the last error once the deadline leaves no room for another wait."""

import asyncio

import pytest

from quorumq import NotFoundError, ResourceAlarmError, UnavailableError
from quorumq.retry import BACKOFF_MAX_S, BACKOFF_START_S, RetryableFailure, retrying, wait_before_retry

NO_LEADER = UnavailableError(503, "no_leader", "no leader yet")


@pytest.mark.parametrize(
    ("attempt_number", "ceiling"),
    [(1, BACKOFF_START_S), (3, 4 * BACKOFF_START_S), (12, BACKOFF_MAX_S), (5000, BACKOFF_MAX_S)],
)
def test_the_wait_after_a_503_is_full_jitter(attempt_number: int, ceiling: float) -> None:
    waits = [wait_before_retry(attempt_number, RetryableFailure(NO_LEADER)) for _ in range(500)]
    assert 0 <= min(waits) < 0.1 * ceiling
    assert 0.9 * ceiling < max(waits) <= ceiling


def test_a_refused_connection_moves_on_without_waiting() -> None:
    assert wait_before_retry(5, RetryableFailure(NO_LEADER, at_once=True)) == 0.0


def test_a_held_back_publish_waits_its_pause_and_up_to_half_again() -> None:
    """A Retry-After is honoured: no retry before it, and jittered after it."""
    alarm = ResourceAlarmError(503, "resource_alarm", "node n2 is in a disk alarm")
    waits = [wait_before_retry(1, RetryableFailure(alarm, pause_s=1.0)) for _ in range(500)]
    assert 1.0 <= min(waits) < 1.1 and 1.4 < max(waits) <= 1.5


async def test_retrying_returns_what_the_first_successful_attempt_returns() -> None:
    failures = [RetryableFailure(NO_LEADER, at_once=True), RetryableFailure(NO_LEADER)]

    async def attempt() -> str:
        if failures:
            raise failures.pop(0)
        return "answer"

    assert await retrying(attempt, asyncio.get_running_loop().time() + 10) == "answer"
    assert failures == []


async def test_retrying_gives_up_with_the_last_error_before_the_deadline() -> None:
    loop = asyncio.get_running_loop()
    attempts = 0

    async def attempt() -> None:
        nonlocal attempts
        attempts += 1
        raise RetryableFailure(UnavailableError(503, "no_leader", f"attempt {attempts}"))

    deadline = loop.time() + 0.5
    with pytest.raises(UnavailableError) as raised:
        await retrying(attempt, deadline)
    assert loop.time() < deadline
    assert attempts > 2
    assert raised.value.reason == f"attempt {attempts}"


async def test_other_errors_are_raised_at_once() -> None:
    attempts = 0

    async def attempt() -> None:
        nonlocal attempts
        attempts += 1
        raise NotFoundError(404, "not_found", "no queue 'q'")

    with pytest.raises(NotFoundError):
        await retrying(attempt, asyncio.get_running_loop().time() + 10)
    assert attempts == 1
