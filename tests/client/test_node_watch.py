"""A node's watch (quorumq.node_watch): one timer ends tracked requests at their deadline, and watched
ones when the node answers neither them, nor anything else, nor a health check."""

import asyncio
import math
from typing import Any

import pytest

from quorumq.attempt_failures import NoAnswer
from quorumq.node_watch import UNRESPONSIVE, NodeWatch

AFTER_S = 0.05


class Probe:
    """A health check that answers `answers` (calling `meanwhile` first), counting its calls."""

    def __init__(self, answers: bool) -> None:
        self.answers = answers
        self.calls = 0
        self.meanwhile = lambda: None

    async def __call__(self) -> bool:
        self.calls += 1
        self.meanwhile()
        return self.answers


def _tracked(watch: NodeWatch, *, deadline: float = math.inf, watched: bool = True) -> "asyncio.Future[Any]":
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[Any] = loop.create_future()
    watch.track(answer, loop.time(), deadline, watched)
    return answer


async def test_a_request_past_its_deadline_fails_with_a_timeout() -> None:
    probe = Probe(answers=True)
    watch = NodeWatch("http://n1", 60.0, probe)
    answer = _tracked(watch, deadline=asyncio.get_running_loop().time() + AFTER_S)
    with pytest.raises(NoAnswer) as failure:
        await answer
    assert failure.value.code == "timeout"
    assert probe.calls == 0


async def test_watched_requests_fail_once_the_node_answers_nothing_and_unwatched_ones_wait() -> None:
    watch = NodeWatch("http://n1", AFTER_S, Probe(answers=False))
    first, second = _tracked(watch), _tracked(watch)
    unwatched = _tracked(watch, watched=False)
    for answer in (first, second):
        with pytest.raises(NoAnswer) as failure:
            await answer
        assert failure.value.code == UNRESPONSIVE
    assert not unwatched.done()
    watch.close()


async def test_a_node_that_answers_its_health_check_is_waited_for() -> None:
    probe = Probe(answers=True)
    watch = NodeWatch("http://n1", AFTER_S, probe)
    answer = _tracked(watch)
    await asyncio.sleep(5 * AFTER_S)
    assert not answer.done()
    assert probe.calls >= 2  # checked again once quiet for as long again
    answer.set_result("late")
    assert await answer == "late"
    watch.untrack(answer)
    watch.close()


async def test_anything_heard_from_the_node_during_a_failed_check_counts_as_an_answer() -> None:
    probe = Probe(answers=False)
    watch = NodeWatch("http://n1", AFTER_S, probe)
    probe.meanwhile = lambda: watch.heard(asyncio.get_running_loop().time())  # e.g. another answer
    answer = _tracked(watch)
    await asyncio.sleep(5 * AFTER_S)
    assert not answer.done()
    assert probe.calls >= 2
    watch.close()


async def test_rule_a_watch_closed_before_its_check_ran_checks_again_when_used_again() -> None:
    probe = Probe(answers=False)
    watch = NodeWatch("http://n1", AFTER_S, probe)
    loop = asyncio.get_running_loop()
    first: asyncio.Future[Any] = loop.create_future()
    watch.track(first, loop.time() - AFTER_S, math.inf, True)  # quiet for `after` already: a check is due
    while watch._check is None:  # the timer fired and started a check task, which has not run yet
        await asyncio.sleep(0)
    assert probe.calls == 0
    watch.close()
    watch.untrack(first)
    second = _tracked(watch, deadline=loop.time() + 40 * AFTER_S)
    with pytest.raises(NoAnswer) as failure:
        await second
    assert failure.value.code == UNRESPONSIVE  # checked again, not left waiting until its deadline
    watch.close()
