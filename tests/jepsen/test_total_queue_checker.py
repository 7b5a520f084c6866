"""The total-queue checker on hand-written histories: one history per rule of the model."""

from __future__ import annotations

from jepsen_tests.checker import check_total_queue
from jepsen_tests.history import Op, OpType, parse_history


def op(process: str, type_: OpType, f: str, value: int | None, time: float = 0.0) -> Op:
    return Op(process, type_, f, value, time)  # type: ignore[arg-type]


def enqueue(value: int, outcome: OpType, process: str = "p0") -> list[Op]:
    return [op(process, "invoke", "enqueue", value), op(process, outcome, "enqueue", value)]


def dequeue(value: int, process: str = "c0") -> list[Op]:
    return [op(process, "invoke", "dequeue", value), op(process, "ok", "dequeue", value)]


def test_every_enqueued_value_dequeued_once_is_valid() -> None:
    history = [*enqueue(1, "ok"), *enqueue(2, "ok"), *dequeue(2), *dequeue(1)]
    verdict = check_total_queue(history)
    assert verdict.valid
    assert verdict.ok == [1, 2]
    assert (verdict.lost, verdict.unexpected, verdict.duplicated, verdict.recovered) == ([], [], {}, [])


def test_confirmed_value_never_dequeued_is_lost_and_invalid() -> None:
    history = [*enqueue(1, "ok"), *enqueue(2, "ok"), *dequeue(1)]
    verdict = check_total_queue(history)
    assert not verdict.valid
    assert verdict.lost == [2]


def test_dequeued_value_never_attempted_is_unexpected_and_invalid() -> None:
    history = [*enqueue(1, "ok"), *dequeue(1), *dequeue(99)]
    verdict = check_total_queue(history)
    assert not verdict.valid
    assert verdict.unexpected == [99]
    assert verdict.lost == []


def test_value_dequeued_twice_is_duplicated_but_valid() -> None:
    history = [*enqueue(1, "ok"), *dequeue(1, "c0"), *dequeue(1, "c1")]
    verdict = check_total_queue(history)
    assert verdict.valid
    assert verdict.duplicated == {1: 2}
    assert verdict.ok == [1]


def test_info_enqueue_later_dequeued_is_recovered_and_valid() -> None:
    history = [*enqueue(1, "info"), *enqueue(2, "ok"), *dequeue(1), *dequeue(2)]
    verdict = check_total_queue(history)
    assert verdict.valid
    assert verdict.recovered == [1]
    assert verdict.info_enqueues == 1


def test_info_enqueue_never_dequeued_is_not_lost() -> None:
    verdict = check_total_queue([*enqueue(1, "info")])
    assert verdict.valid
    assert verdict.lost == []


def test_failed_enqueue_that_is_dequeued_counts_as_recovered_not_unexpected() -> None:
    history = [*enqueue(1, "fail"), *dequeue(1)]
    verdict = check_total_queue(history)
    assert verdict.valid
    assert verdict.recovered == [1]
    assert verdict.failed_enqueues == 1
    assert verdict.notes == ["dequeued although their enqueue failed: [1]"]


def test_unfinished_dequeues_and_nacks_do_not_count_as_dequeued() -> None:
    history = [
        *enqueue(1, "ok"),
        op("c0", "invoke", "dequeue", 1),
        op("c0", "fail", "dequeue", 1),
        op("c1", "invoke", "dequeue", 1),
        op("c1", "info", "dequeue", 1),
    ]
    verdict = check_total_queue(history)
    assert verdict.lost == [1]


def test_summary_prints_counts_and_values_of_each_set() -> None:
    history = [*enqueue(1, "ok"), *enqueue(2, "info"), *dequeue(2), *dequeue(2), *dequeue(7)]
    text = check_total_queue(history).summary()
    assert "lost: 1 [1]" in text
    assert "unexpected: 1 [7]" in text
    assert "duplicated: 1 [2]" in text
    assert "recovered: 1 [2]" in text


def test_history_lines_round_trip_through_json() -> None:
    ops = [*enqueue(5, "ok"), op("c0", "invoke", "dequeue", None, 1.5)]
    lines = [o.to_json() for o in ops]
    assert list(parse_history(lines)) == ops
    assert '"value"' not in lines[-1]
