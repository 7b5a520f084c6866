"""The disk alarm's rule in the checker (`jepsen_tests/disk_refusals.py`), on hand-written histories: a
publish held back only by a disk alarm may end `resource_alarm` or `timeout`, nothing else; other
faults and a disk filled to the last byte are judged by loss and duplicates only."""

from __future__ import annotations

from jepsen_tests.checker import check_total_queue
from jepsen_tests.history import Op, OpType
from jepsen_tests.nemesis_log import FaultSpan

ALARM = FaultSpan(10.0, 20.0, "disk", "leader", "disk full but 8 MiB: node1")
LAST_BYTE = FaultSpan(10.0, 20.0, "disk", "all-last-byte", "disk full to the last byte: node1, node2, node3")
KILL = FaultSpan(15.0, 16.0, "kill", "leader", "SIGKILL node1")


def publish(value: int, span: tuple[float, float], outcome: OpType, error: str | None) -> list[Op]:
    """A publish of `value` invoked and completed at `span`, then its value dequeued when it may have
    landed (all but `fail`), so only the rule can make the history invalid."""
    invoked, completed = span
    ops = [
        Op("p0", "invoke", "enqueue", value, invoked, "a"),
        Op("p0", outcome, "enqueue", value, completed, "a", error),
    ]
    if outcome != "fail":
        ops.append(Op("c0", "ok", "dequeue", value, completed + 1, "a"))
    return ops


def test_a_publish_held_by_the_alarm_may_end_resource_alarm_or_timeout() -> None:
    history = [
        *publish(1, (11.0, 16.0), "info", "resource_alarm"),
        *publish(2, (12.0, 17.0), "info", "timeout"),
        *publish(3, (13.0, 13.1), "ok", None),
    ]
    verdict = check_total_queue(history, [ALARM])
    assert verdict.refused_otherwise == {}
    assert verdict.valid


def test_any_other_refusal_while_only_the_alarm_holds_is_invalid() -> None:
    history = [
        *publish(1, (11.0, 11.2), "info", "no_leader"),
        *publish(2, (19.0, 21.0), "fail", "queue_not_found"),  # began in the fault, ended after its heal
        *publish(3, (12.0, 16.0), "info", "resource_alarm"),
    ]
    verdict = check_total_queue(history, [ALARM])
    assert verdict.refused_otherwise == {1: "no_leader", 2: "queue_not_found"}
    assert not verdict.valid
    assert "refused otherwise during a disk alarm: 2 [1, 2]" in verdict.summary()
    assert verdict.to_dict()["refused_otherwise_count"] == 2


def test_a_refusal_under_another_fault_too_or_outside_any_is_not_the_alarm_rules() -> None:
    history = [
        *publish(1, (15.5, 15.9), "info", "outcome_unknown"),  # the kill overlaps it
        *publish(2, (2.0, 2.1), "info", "no_leader"),  # no fault at all
    ]
    assert check_total_queue(history, [ALARM, KILL]).refused_otherwise == {}


def test_a_disk_filled_to_the_last_byte_restarts_nodes_so_its_refusals_are_not_judged() -> None:
    history = [
        *publish(1, (11.0, 11.5), "info", "outcome_unknown"),
        *publish(2, (12.0, 12.1), "fail", "no_leader"),
    ]
    verdict = check_total_queue(history, [LAST_BYTE])
    assert verdict.refused_otherwise == {}
    assert verdict.valid
