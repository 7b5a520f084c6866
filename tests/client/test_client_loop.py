"""LoopThread.close: the final coroutine and the stop of the loop share one deadline, so closing ends
within it even when the loop is stuck."""

import time

import pytest

from quorumq import CallTimeoutError
from quorumq.loop import LoopThread

DEADLINE_S = 2.0
STUCK_S = 3 * DEADLINE_S
SLACK_S = 1.0  # a loaded machine's scheduling, not the loop's timing


async def _block_the_loop() -> None:
    time.sleep(STUCK_S)  # a loop stuck in blocking code: what this test is about


def test_close_ends_within_one_deadline_when_the_loop_is_stuck() -> None:
    loop = LoopThread(name="stuck")
    began = time.monotonic()
    with pytest.raises(CallTimeoutError, match="close did not finish"):
        loop.close(_block_the_loop(), DEADLINE_S, "close")
    assert time.monotonic() - began < DEADLINE_S + SLACK_S


def test_close_runs_the_final_coroutine_and_stops_the_loop() -> None:
    loop = LoopThread(name="closing")
    finished = []

    async def final() -> None:
        finished.append(True)

    loop.close(final(), DEADLINE_S, "close")
    assert finished == [True]
