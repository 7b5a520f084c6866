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
        throttle.check("a")
        throttle.failed("a")
        clock.now += 10
    with pytest.raises(LoginThrottled) as raised:
        throttle.check("a")
    assert raised.value.retry_after_s == 30  # the first failure, at 1000, leaves the window at 1060
    throttle.check("b")
    clock.now = 1060
    throttle.check("a")


def test_the_sources_remembered_are_bounded() -> None:
    throttle = LoginThrottle(failures=1, window_s=60, max_sources=2, clock=Clock())
    for source in ("a", "b", "c"):
        throttle.failed(source)
    throttle.check("a")  # forgotten: the oldest
    with pytest.raises(LoginThrottled):
        throttle.check("c")
