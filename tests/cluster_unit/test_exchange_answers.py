"""How a publish through an exchange answers from its copies' answers (`exchange_answer`), the rules a
review of the exchanges slice asked for, each named after its finding."""

from __future__ import annotations

from typing import Any

from api.exchange_publishing import exchange_answer

OK: dict[str, Any] = {"ids": [1, 2], "duplicate": False}


def test_a_copy_for_a_queue_this_node_no_longer_lists_is_gone_not_a_failure() -> None:
    """Finding 6: a queue deleted since this node routed to it (its metadata no longer lists it) is
    gone, as RabbitMQ drops a copy for a deleted queue: its messages are unroutable, not an error."""
    answers = {"a": (201, OK), "b": (404, {"error": "not_found", "reason": "no queue 'b'"})}
    status, body = exchange_answer(answers, {"a": [0, 1], "b": [0, 1]}, 2, [], False, listed=lambda q: False)
    assert status == 201 and list(body["routed"]) == ["a"] and "unroutable" not in body
    status, body = exchange_answer({"b": answers["b"]}, {"b": [0, 1]}, 2, [], True, listed=lambda q: False)
    assert status == 200 and body["unroutable"] == [0, 1]


def test_a_not_found_for_a_queue_this_node_lists_is_retried() -> None:
    """Finding 6: a 404 for a queue this node's metadata still lists (a metadata leader that has not
    applied its declare yet) is no answer the client should give up on: 503, retryable."""
    answers = {"b": (404, {"error": "not_found", "reason": "no queue 'b'"})}
    status, body = exchange_answer(answers, {"b": [0]}, 1, [], False, listed=lambda q: True)
    assert status == 503 and body["queue"] == "b"


def test_a_retryable_failure_is_the_answer_over_a_final_one() -> None:
    """Finding 6: with one target full (507) and another without a leader (503), the answer is the
    503, so the client retries and the copy that can still go in does."""
    answers = {
        "a": (507, {"error": "queue_full", "reason": "full"}),
        "b": (503, {"error": "no_leader", "reason": "none"}),
        "c": (201, {"ids": [4], "duplicate": False}),
    }
    status, body = exchange_answer(answers, {q: [0] for q in answers}, 1, [], False, listed=lambda q: True)
    assert status == 503 and body["queue"] == "b"
    assert list(body["routed"]) == ["c"] and list(body["failed"]) == ["a"]


def test_a_retry_routed_otherwise_than_its_first_attempt_is_refused() -> None:
    """Finding 5: a queue answers a retried seq with the first attempt's ids; when this attempt routed
    it more messages than those ids, the missing ones were never enqueued there: 409, not 201."""
    answers = {"a": (201, {"ids": [7], "duplicate": True})}
    status, body = exchange_answer(answers, {"a": [0, 1]}, 2, [], False, listed=lambda q: True)
    assert status == 409 and body["error"] == "routing_changed" and body["queue"] == "a"
