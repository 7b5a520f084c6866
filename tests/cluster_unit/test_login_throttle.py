"""The login throttle: a source that failed too often within the window waits; others do not."""

from __future__ import annotations

import pytest

from api.login_throttle import LoginThrottle, LoginThrottled


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_source_waits_until_its_oldest_failure_leaves_the_window() -> None:
    clock = Clock()
    throttle = LoginThrottle(failures=3, window_s=60, clock=clock)
    for _ in range(3):
        throttle.begin("a")
        throttle.end("a", failed=True)
        clock.now += 10
    with pytest.raises(LoginThrottled) as raised:
        throttle.begin("a")
    assert raised.value.retry_after_s == 30  # the first failure, at 1000, leaves the window at 1060
    throttle.begin("b")
    clock.now = 1060
    throttle.begin("a")


def test_the_sources_remembered_are_bounded() -> None:
    throttle = LoginThrottle(failures=1, window_s=60, max_sources=2, clock=Clock())
    for source in ("a", "b", "c"):
        throttle.begin(source)
        throttle.end(source, failed=True)
    throttle.begin("a")  # forgotten: the oldest
    with pytest.raises(LoginThrottled):
        throttle.begin("c")


def test_checks_in_progress_count_against_the_limit_and_are_capped() -> None:
    throttle = LoginThrottle(failures=3, window_s=60, max_in_flight=2, clock=Clock())
    throttle.begin("a")
    throttle.begin("a")
    with pytest.raises(LoginThrottled):
        throttle.begin("a")  # two in progress already
    throttle.begin("b")  # another source is not affected
    throttle.end("a", failed=True)
    throttle.begin("a")
    throttle.end("a", failed=True)  # two failures, one check in progress: as good as three failures
    with pytest.raises(LoginThrottled) as raised:
        throttle.begin("a")
    assert raised.value.retry_after_s == 1
    throttle.end("a", failed=False)  # it succeeded: two failures remain
    throttle.begin("a")
