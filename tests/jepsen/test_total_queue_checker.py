"""The total-queue checker on hand-written histories: one history per rule of the model, per-queue
checks, protocol errors and the causes of duplicates."""

from __future__ import annotations

from jepsen_tests.checker import check_total_queue
from jepsen_tests.duplicates import NO_FAULT_BOUND
from jepsen_tests.history import Op, OpType, parse_history
from jepsen_tests.nemesis_log import FaultSpan


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


def test_value_dequeued_again_after_its_ack_failed_is_duplicated_but_valid() -> None:
    acked_in_vain = Op("c0", "ok", "dequeue", 1, 0.0, error="timeout")
    history = [*enqueue(1, "ok"), op("c0", "invoke", "dequeue", 1), acked_in_vain, *dequeue(1, "c1")]
    verdict = check_total_queue(history)
    assert verdict.valid
    assert verdict.duplicated == {1: 2}
    assert verdict.ok == [1]
    assert verdict.duplicates.causes == {"ack-lost": 1}


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


def test_a_detail_holds_facts_separated_by_spaces() -> None:
    grouped = Op("p0", "ok", "enqueue", 1, 0.0, "grp", detail="group=g1 priority=9")
    assert grouped.facts == {"group": "g1", "priority": "9"}
    assert Op("c0", "ok", "dequeue", 1, 0.0, detail="touched").facts == {"touched": ""}
    assert Op("c0", "ok", "dequeue", 1, 0.0).facts == {}


def at(
    process: str, type_: OpType, f: str, value: int, time: float, queue: str, error: str | None = None
) -> Op:
    return Op(process, type_, f, value, time, queue, error)  # type: ignore[arg-type]


def test_value_dequeued_from_its_queue_or_its_dead_letter_queue_is_fine_elsewhere_wrong_queue() -> None:
    history = [
        at("p0", "invoke", "enqueue", 1, 0.0, "a"),
        at("p0", "ok", "enqueue", 1, 0.1, "a"),
        at("p0", "invoke", "enqueue", 2, 0.2, "a"),
        at("p0", "ok", "enqueue", 2, 0.3, "a"),
        at("p0", "invoke", "enqueue", 3, 0.4, "b"),
        at("p0", "ok", "enqueue", 3, 0.5, "b"),
        at("c0", "ok", "dequeue", 1, 1.0, "a"),
        at("c0", "ok", "dequeue", 2, 1.1, "a-dlq"),
        at("c1", "ok", "dequeue", 3, 1.2, "a"),
    ]
    verdict = check_total_queue(history)
    assert not verdict.valid
    assert verdict.wrong_queue == {3: ("b", "a")}
    assert (verdict.lost, verdict.unexpected) == ([], [])
    assert "3 went into b and came out of a" in verdict.summary()
    assert verdict.to_dict()["wrong_queue_count"] == 1


def test_confirm_with_a_protocol_error_is_counted_and_invalid_even_when_dequeued() -> None:
    history = [
        at("p0", "invoke", "enqueue", 1, 0.0, "a"),
        at("p0", "ok", "enqueue", 1, 0.1, "a", "short_ids"),
        at("c0", "ok", "dequeue", 1, 1.0, "a"),
    ]
    verdict = check_total_queue(history)
    assert verdict.protocol_errors == [1]
    assert not verdict.valid
    assert verdict.lost == []


def redelivered(value: int, first: tuple[float, float], error: str | None = None) -> list[Op]:
    """An enqueue of `value`, a dequeue delivered and acked at `first` (ack error `error`), and a second
    dequeue later."""
    delivered, acked = first
    return [
        at("p0", "invoke", "enqueue", value, 0.0, "a"),
        at("p0", "ok", "enqueue", value, 0.01, "a"),
        at("c0", "invoke", "dequeue", value, delivered, "a"),
        at("c0", "ok", "dequeue", value, acked, "a", error),
        at("c1", "invoke", "dequeue", value, acked + 1, "a"),
        at("c1", "ok", "dequeue", value, acked + 1.01, "a"),
    ]


def test_each_duplicate_is_put_down_to_a_failed_ack_a_fault_a_slow_ack_or_nothing() -> None:
    kill = FaultSpan(10.0, 15.0, "kill", "leader", "SIGKILL node1")
    history = [
        *redelivered(1, (1.0, 1.1), error="timeout"),  # the ack failed
        *redelivered(2, (14.0, 14.1)),  # held during the kill
        *redelivered(3, (16.0, 16.5)),  # acked within the aftermath of the heal
        *redelivered(4, (20.0, 26.0)),  # held longer than the consumer timeout
        *redelivered(5, (30.0, 30.1)),  # nothing explains it
    ]
    ordered = sorted(history, key=lambda o: o.time)
    duplicates = check_total_queue(ordered, [kill]).duplicates
    assert duplicates.values == {
        "ack-lost": [1],
        "fault": [2, 3],
        "consumer-timeout": [4],
        "unexplained": [5],
    }
    assert duplicates.count == 5
    assert duplicates.rate == 5 / 10
    assert duplicates.no_fault_rate == 2 / 10


def test_duplicates_no_fault_explains_above_the_bound_make_the_run_invalid() -> None:
    clean = [op for v in range(1000, 1000 + 250) for op in [*enqueue(v, "ok"), *dequeue(v)]]
    one = redelivered(1, (30.0, 30.1))
    assert check_total_queue([*one, *clean]).valid  # 1 of 252 dequeues: 0.4 % ≤ 0.5 %
    two = redelivered(2, (31.0, 31.1))
    verdict = check_total_queue([*one, *two, *clean])  # 2 of 254: 0.8 %
    assert not verdict.valid
    assert verdict.duplicates.causes == {"unexplained": 2}
    assert verdict.to_dict()["duplicates"]["no_fault_bound"] == NO_FAULT_BOUND


def test_the_verdict_counts_the_queue_features_completed_ops_used() -> None:
    history = [
        Op("p0", "invoke", "enqueue", 1, 0.0, "q", detail="priority=9"),
        Op("p0", "ok", "enqueue", 1, 0.1, "q", detail="priority=9"),
        Op("p0", "invoke", "enqueue", 2, 0.2, "q", detail="priority=3"),
        Op("p0", "info", "enqueue", 2, 0.3, "q", "timeout", detail="priority=3"),  # not completed
        Op("c0", "invoke", "dequeue", 1, 0.4, "q"),
        Op("c0", "fail", "dequeue", 1, 0.5, "q", detail="delay=100"),
        Op("c0", "invoke", "dequeue", 1, 0.6, "q"),
        Op("c0", "ok", "dequeue", 1, 0.7, "q", detail="touched"),
    ]
    verdict = check_total_queue(history)
    assert verdict.exercised == {
        "nacked with a delay": 1,
        "published with a priority": 1,
        "touched before the ack": 1,
    }
    assert verdict.to_dict()["exercised"] == verdict.exercised
    assert "exercised: nacked with a delay 1" in verdict.summary()
    assert Op.from_json(history[1].to_json()) == history[1]  # the detail survives the history file


def resend(first: int, value: int, outcome: OpType, time: float) -> list[Op]:
    """A new value resent under the message id `first` was published with (`jepsen_tests.message_ids`)."""
    invoked = Op("p0", "invoke", "resend", value, time, detail=f"first={first}")
    return [invoked, Op("p0", outcome, "resend", value, time + 0.1, detail=f"first={first}")]


def test_a_resend_answered_as_a_duplicate_is_neither_lost_nor_dequeued_and_valid() -> None:
    history = [*enqueue(1, "ok"), *resend(1, 2, "ok", 1.0), *dequeue(1)]
    verdict = check_total_queue(history)
    assert verdict.valid, verdict.summary()
    assert verdict.lost == [] and verdict.exercised == {"resent under a message id": 1}


def test_both_values_of_one_message_id_dequeued_are_enqueued_twice_and_invalid() -> None:
    history = [*enqueue(1, "info"), *resend(1, 2, "ok", 1.0), *dequeue(1), *dequeue(2)]
    verdict = check_total_queue(history)
    assert not verdict.valid
    assert verdict.enqueued_twice == {1: 2} and verdict.unexpected == []


def test_a_resend_dequeued_after_its_first_was_confirmed_is_invalid_but_may_land_for_an_unknown_first() -> (
    None
):
    confirmed = [op("p0", "invoke", "enqueue", 1, 0.0), op("p0", "ok", "enqueue", 1, 0.5)]
    verdict = check_total_queue([*confirmed, *resend(1, 2, "ok", 1.0), *dequeue(2)])
    assert not verdict.valid and verdict.resend_dequeued == {1: 2}
    unknown = check_total_queue([*enqueue(1, "info"), *resend(1, 2, "ok", 1.0), *dequeue(2)])
    assert unknown.valid, unknown.summary()
    assert unknown.recovered == [2]


FANNED = "fanout=fan-a,fan-b"


def fanned(value: int, outcome: OpType, time: float = 0.0) -> list[Op]:
    """A publish of `value` through the exchange `fan`, bound to fan-a and fan-b (`jepsen_tests.fanout`)."""
    invoked = Op("p0", "invoke", "enqueue", value, time, "fan", detail=FANNED)
    return [invoked, Op("p0", outcome, "enqueue", value, time + 0.1, "fan", detail=FANNED)]


def dequeue_from(queue: str, value: int, time: float = 1.0, process: str = "c0") -> list[Op]:
    return [
        Op(process, "invoke", "dequeue", value, time, queue),
        Op(process, "ok", "dequeue", value, time, queue),
    ]


def test_a_value_confirmed_through_the_exchange_out_of_both_queues_is_valid_and_not_duplicated() -> None:
    history = [*fanned(1, "ok"), *dequeue_from("fan-a", 1), *dequeue_from("fan-b-dlq", 1, process="drain")]
    verdict = check_total_queue(history)
    assert verdict.valid, verdict.summary()
    assert (verdict.lost, verdict.fanout_missing, verdict.duplicated, verdict.wrong_queue) == ([], {}, {}, {})
    assert verdict.duplicates.count == 0
    assert verdict.exercised == {"published through a fanout exchange": 1}
    again = check_total_queue([*history, *dequeue_from("fan-a", 1, 2.0, "c1")])
    assert again.duplicated == {1: 3} and again.duplicates.count == 1  # fan-a's copy came out twice


def test_a_value_confirmed_through_the_exchange_missing_from_one_queue_is_fanout_missing_and_invalid() -> (
    None
):
    verdict = check_total_queue([*fanned(1, "ok"), *fanned(2, "ok"), *dequeue_from("fan-a", 1)])
    assert not verdict.valid
    assert verdict.fanout_missing == {1: ["fan-b"], 2: ["fan-a", "fan-b"]}
    assert verdict.lost == [2]  # no copy at all: lost as well
    assert verdict.to_dict()["fanout_missing"] == {"1": ["fan-b"], "2": ["fan-a", "fan-b"]}
    assert "1 was confirmed through a fanout exchange and never came out of fan-b" in verdict.summary()


def test_a_value_fanned_out_with_an_unknown_or_refused_outcome_may_miss_a_copy() -> None:
    history = [*fanned(1, "info"), *fanned(2, "info"), *dequeue_from("fan-b", 1)]
    verdict = check_total_queue(history)
    assert verdict.valid, verdict.summary()
    assert verdict.recovered == [1] and verdict.fanout_missing == {}


def test_only_values_published_through_the_exchange_come_out_of_its_queues() -> None:
    history = [
        at("p0", "invoke", "enqueue", 1, 0.0, "jepsen-0"),
        at("p0", "ok", "enqueue", 1, 0.1, "jepsen-0"),
        *fanned(2, "ok"),
        *dequeue_from("jepsen-0", 1),
        *dequeue_from("fan-a", 1),  # published to jepsen-0 only
        *dequeue_from("fan-a", 2),
        *dequeue_from("jepsen-0", 2),  # fanned, but jepsen-0 is not bound
    ]
    verdict = check_total_queue(history)
    assert not verdict.valid
    assert verdict.wrong_queue == {1: ("jepsen-0", "fan-a"), 2: ("fan", "jepsen-0")}


def test_a_resend_through_the_exchange_is_judged_queue_by_queue() -> None:
    resent = [
        Op("p0", "invoke", "resend", 2, 1.0, "fan", detail="first=1"),
        Op("p0", "ok", "resend", 2, 1.1, "fan", detail="first=1"),
    ]
    first_unknown = [*fanned(1, "info"), *resent]
    landed_apart = [*first_unknown, *dequeue_from("fan-a", 1, 2.0), *dequeue_from("fan-b", 2, 2.0)]
    verdict = check_total_queue(landed_apart)
    assert verdict.valid, verdict.summary()  # the first reached fan-a only, the resend fan-b only
    assert verdict.wrong_queue == {} and verdict.enqueued_twice == {}
    both_in_one = check_total_queue([*landed_apart, *dequeue_from("fan-a", 2, 3.0)])
    assert not both_in_one.valid and both_in_one.enqueued_twice == {1: 2}
