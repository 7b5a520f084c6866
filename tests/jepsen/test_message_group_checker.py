"""The message-group checks on hand-written histories (`jepsen_tests.message_groups`): each breach is
caught, and the interleavings faults give a correct queue are accepted."""

from __future__ import annotations

from dataclasses import replace

from jepsen_tests.checker import TotalQueueVerdict, check_total_queue
from jepsen_tests.history import Op, OpType
from jepsen_tests.message_groups import group_detail, held_detail

GRP = "grp"


def publish(value: int, group: str, outcome: OpType = "ok", process: str = "p0") -> list[Op]:
    """A publish of `value` in `group` to the grouped queue, invoked and completed at once."""
    return [invoke_publish(value, group, process), complete_publish(value, group, outcome, process)]


def invoke_publish(value: int, group: str, process: str = "p0") -> Op:
    return Op(process, "invoke", "enqueue", value, 0.0, GRP, detail=group_detail(group))


def complete_publish(value: int, group: str, outcome: OpType = "ok", process: str = "p0") -> Op:
    return Op(process, outcome, "enqueue", value, 0.0, GRP, detail=group_detail(group))


def batch(process: str, number: int, *held: tuple[int, str]) -> list[Op]:
    """One poll's answer to `process`: a dequeue invoke per (value, group), as the workload records it."""
    return [Op(process, "invoke", "dequeue", v, 0.0, GRP, detail=held_detail(number, g)) for v, g in held]


def settled(process: str, outcome: OpType, *values: int, error: str | None = None) -> list[Op]:
    """Dequeue completions: `ok` for acked values, `fail` for ones handed back (nacked or rejected)."""
    return [Op(process, outcome, "dequeue", value, 0.0, GRP, error) for value in values]


def check(*parts: list[Op]) -> TotalQueueVerdict:
    """The verdict on the parts' ops in this order, each 10 ms after the one before."""
    ops = [op for part in parts for op in part]
    return check_total_queue([replace(op, time=i / 100) for i, op in enumerate(ops)])


def test_groups_handed_out_one_at_a_time_in_order_to_two_consumers_are_valid() -> None:
    verdict = check(
        publish(1, "g0"),
        publish(2, "g1"),
        publish(3, "g0"),
        publish(4, "g1", process="p1"),
        batch("c0", 1, (1, "g0"), (2, "g1")),  # two groups at once: fine
        settled("c0", "ok", 1, 2),
        batch("c1", 1, (3, "g0")),  # the same number in another consumer's hands: another batch
        batch("c0", 2, (4, "g1")),
        settled("c1", "ok", 3),
        settled("c0", "ok", 4),
    )
    assert verdict.valid, verdict.summary()
    assert (verdict.group_overlap, verdict.group_order) == ({}, {})
    assert verdict.exercised == {"published in a group": 4}


def test_two_values_of_a_group_in_one_batch_overlap_and_are_invalid() -> None:
    verdict = check(
        publish(1, "g0"),
        publish(2, "g1"),
        publish(3, "g0"),
        batch("c0", 7, (1, "g0"), (2, "g1"), (3, "g0")),
        settled("c0", "ok", 1, 2, 3),
    )
    assert not verdict.valid
    assert verdict.group_overlap == {3: 1} and verdict.group_order == {}
    assert verdict.to_dict()["group_overlap"] == {"3": 1}
    assert "values out with another of their group: 1 [3]" in verdict.summary()
    assert "3 came in one batch with 1 of its group" in verdict.notes


def test_a_value_out_before_one_confirmed_ahead_of_it_in_its_group_is_out_of_order_and_invalid() -> None:
    verdict = check(
        publish(1, "g0"),
        publish(2, "g0", process="p1"),  # by another publisher, after 1 was confirmed: behind it
        batch("c0", 1, (2, "g0")),
        settled("c0", "ok", 2),
        batch("c1", 2, (1, "g0")),
        settled("c1", "ok", 1),
    )
    assert not verdict.valid
    assert verdict.group_order == {2: 1} and verdict.group_overlap == {}
    assert verdict.to_dict()["group_order_count"] == 1
    assert "values out before one ahead of them in their group: 1 [2]" in verdict.summary()


def test_values_published_at_once_or_after_an_unknown_outcome_may_come_out_in_either_order() -> None:
    verdict = check(
        [invoke_publish(1, "g0"), invoke_publish(2, "g0", "p1")],
        [complete_publish(1, "g0"), complete_publish(2, "g0", process="p1")],  # neither ahead
        publish(3, "g1", "info"),  # may have landed after 4
        publish(4, "g1"),
        batch("c0", 1, (2, "g0"), (4, "g1")),
        settled("c0", "ok", 2, 4),
        batch("c0", 2, (1, "g0"), (3, "g1")),
        settled("c0", "ok", 1, 3),
    )
    assert verdict.valid, verdict.summary()
    assert verdict.recovered == [3]


def test_a_nacked_head_comes_out_again_before_the_next_value_of_its_group() -> None:
    verdict = check(
        publish(1, "g0"),
        publish(2, "g0"),
        batch("c0", 1, (1, "g0")),
        [Op("c0", "fail", "dequeue", 1, 0.0, GRP, detail="delay=400")],  # back to the head, after 400 ms
        batch("c1", 2, (1, "g0")),
        settled("c1", "ok", 1),
        batch("c0", 3, (2, "g0")),
        settled("c0", "ok", 2),
    )
    assert verdict.valid, verdict.summary()
    assert verdict.exercised["nacked with a delay"] == 1


def test_a_dead_lettered_head_frees_its_group_and_its_dead_letter_comes_out_when_drained() -> None:
    verdict = check(
        publish(1, "g0"),
        publish(2, "g0"),
        publish(3, "g0"),
        batch("c0", 1, (1, "g0")),
        settled("c0", "fail", 1),  # rejected: dead-lettered, its group goes on
        # 2 was dead-lettered past its delivery limit, every hand-out of it lost with its poll's answer
        batch("c1", 2, (3, "g0")),
        settled("c1", "ok", 3),
        [Op("drain", type_, "dequeue", v, 0.0, f"{GRP}-dlq") for type_ in ("invoke", "ok") for v in (1, 2)],
    )
    assert verdict.valid, verdict.summary()
    assert verdict.lost == []


def test_a_consumer_crashed_mid_batch_leaves_its_values_at_their_groups_heads() -> None:
    verdict = check(
        publish(1, "g0"),
        publish(2, "g1"),
        publish(3, "g0"),
        batch("c0", 1, (1, "g0"), (2, "g1")),
        settled("c0", "ok", 1, 2, error="crashed"),  # killed mid-ack: the ack never landed
        batch("c1", 2, (2, "g1"), (1, "g0")),  # back after c0's consumer timeout
        settled("c1", "ok", 1, 2),
        batch("c1", 3, (3, "g0")),
        settled("c1", "ok", 3),
    )
    assert verdict.valid, verdict.summary()
    assert verdict.duplicates.causes == {"ack-lost": 2}


def test_a_value_taken_from_a_slow_consumer_lets_its_group_go_on_before_that_consumer_acks() -> None:
    verdict = check(
        publish(1, "g0"),
        publish(2, "g0"),
        batch("c0", 1, (1, "g0")),  # held past the consumer timeout: the server takes it back
        batch("c1", 2, (1, "g0")),
        settled("c1", "ok", 1),
        batch("c1", 3, (2, "g0")),
        settled("c0", "ok", 1, error="consumer_timeout"),  # c0's ack, too late: 1 is duplicated
        settled("c1", "ok", 2),
    )
    assert (verdict.group_overlap, verdict.group_order, verdict.lost) == ({}, {}, [])


def test_a_resend_under_a_message_id_stands_in_its_first_values_group() -> None:
    resent = [
        Op("p0", "invoke", "resend", 2, 0.0, GRP, detail="first=1"),
        Op("p0", "ok", "resend", 2, 0.0, GRP, detail="first=1"),
    ]
    verdict = check(
        publish(1, "g0", "info"),  # never landed: the resend did
        resent,
        publish(3, "g0"),
        batch("c0", 1, (3, "g0")),
        settled("c0", "ok", 3),
        batch("c0", 2, (2, "g0")),
        settled("c0", "ok", 2),
    )
    assert not verdict.valid
    assert verdict.group_order == {3: 2}


def test_a_group_is_one_queues_and_orders_nothing_in_another() -> None:
    elsewhere = [*publish(2, "g0"), *batch("c1", 1, (2, "g0")), *settled("c1", "ok", 2)]
    verdict = check(
        publish(1, "g0"),
        [replace(op, queue="grp2") for op in elsewhere],  # grp2's g0, after grp's 1 was confirmed
        batch("c0", 2, (1, "g0")),
        settled("c0", "ok", 1),
    )
    assert verdict.valid, verdict.summary()
