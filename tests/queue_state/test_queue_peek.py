"""`QueueMachine.peek(position)`: the ready message at a 1-based position in the order the serve step
takes them (returns, then main), changing nothing (RabbitMQ's `rabbitmq-queues peek`)."""

from __future__ import annotations

import pytest
from queue_state_helpers import enqueue, make_machine

from queue_state.commands import Checkout, EntryMeta, Get, Return


def test_rule_peek_counts_returns_before_main_and_moves_nothing() -> None:
    m = make_machine(delivery_limit=5)  # with a limit, returns go to `returns`, served first
    enqueue(m, 1, count=4)
    m.apply(EntryMeta(2), Get("g", 1, False))  # takes message 1
    m.apply(EntryMeta(3), Return((1,), None))  # 1 goes back to returns, ahead of 2, 3 and 4
    before = b"".join(m.snapshot_chunks())
    peeked = [m.peek(position) for position in (1, 2, 3, 4)]
    assert m.peek(5) is None
    assert [(d.id, d.delivery_count) if d else None for d in peeked] == [(1, 1), (2, 0), (3, 0), (4, 0)]
    assert b"".join(m.snapshot_chunks()) == before


def test_rule_peek_sees_only_ready_messages() -> None:
    m = make_machine()
    enqueue(m, 1, count=3)
    m.apply(EntryMeta(2), Checkout("c", 2))  # holds 1 and 2
    first = m.peek(1)
    assert first is not None and first.id == 3
    assert m.peek(2) is None


def test_rule_peek_past_the_end_of_an_empty_queue_is_none_and_below_1_an_error() -> None:
    m = make_machine()
    assert m.peek(1) is None
    with pytest.raises(ValueError):
        m.peek(0)
