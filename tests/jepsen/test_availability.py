"""Publish gaps: from a fault's start and from its heal to the first confirm of a publish invoked then."""

from __future__ import annotations

from jepsen_tests.availability import publish_gaps
from jepsen_tests.history import Op
from jepsen_tests.nemesis_log import FaultSpan

KILL = FaultSpan(10.0, 15.0, "kill", "leader", "SIGKILL node1")


def publish(process: str, value: int, invoked: float, completed: float, outcome: str = "ok") -> list[Op]:
    return [
        Op(process, "invoke", "enqueue", value, invoked),
        Op(process, outcome, "enqueue", value, completed),  # type: ignore[arg-type]
    ]


def test_a_publish_invoked_before_the_start_does_not_end_the_gap() -> None:
    history = [
        *publish("p0", 1, 9.9, 10.2),  # in flight when the fault started: not counted
        *publish("p1", 2, 10.1, 13.0, "info"),  # not confirmed
        *publish("p2", 3, 10.5, 12.5),  # the first confirm of a publish invoked after the start
        *publish("p0", 4, 11.0, 12.0),  # invoked later, confirmed earlier: this one ends the gap
        *publish("p1", 5, 15.2, 15.3),  # the first after the heal
    ]
    history.sort(key=lambda op: op.time)
    (gap,) = publish_gaps(history, [KILL])
    assert (gap.from_start, gap.from_heal) == (2.0, 0.3)
    assert gap.to_dict() == {
        "nemesis": "kill",
        "kind": "leader",
        "start": 10.0,
        "stop": 15.0,
        "from_start": 2.0,
        "from_heal": 0.3,
    }
    assert gap.summary() == "publishing resumed 2.00 s after the start, 0.30 s after the heal"


def test_no_confirm_after_a_time_is_no_gap_at_all() -> None:
    history = publish("p0", 1, 11.0, 11.5)
    (gap,) = publish_gaps(history, [KILL])
    assert (gap.from_start, gap.from_heal) == (1.5, None)
    assert "never" in gap.summary()
