"""Durable consumers: numbered checkouts, identical re-reads, settle-below, no timeouts, cancel returns."""

from __future__ import annotations

import pytest
from queue_state_helpers import delivered, enqueue, forgotten, make_machine

from queue_state.commands import (
    Cancel,
    Checkout,
    ConsumerDown,
    DurableCheckout,
    DurableSettle,
    EntryMeta,
    Get,
    Return,
    Settle,
    Tick,
)
from queue_state.durable import DurableLogGap
from queue_state.effects import DurablePosition, Failure, Ok
from queue_state.machine import QueueMachine


def test_durable_checkout_numbers_deliveries_from_zero_in_queue_order() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=5)
    assert machine.apply(EntryMeta(2), DurableCheckout("spark", 3))[0] == DurablePosition(0, 3, 30)
    assert machine.apply(EntryMeta(3), DurableCheckout("spark", 10))[0] == DurablePosition(0, 5, 20)
    assert [(seq, d.id) for seq, d in machine.durable_log("spark", 0, 5)] == [(i, i + 1) for i in range(5)]


def test_a_checkout_of_nothing_registers_the_consumer_and_reports_its_position() -> None:
    machine = make_machine()
    assert machine.apply(EntryMeta(1), DurableCheckout("spark", 0))[0] == DurablePosition(0, 0)
    assert [info.name for info in machine.durable_consumers()] == ["spark"]


def test_reading_a_range_again_returns_identical_rows() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=4)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 4))
    first = machine.durable_log("spark", 1, 4)
    machine.apply(EntryMeta(10_000), Tick())
    assert machine.durable_log("spark", 1, 4) == first


def test_settle_below_releases_every_earlier_delivery_and_is_idempotent_and_monotonic() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=5)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 5))
    reply, effects = machine.apply(EntryMeta(3), DurableSettle("spark", 3))
    assert reply == DurablePosition(3, 5)
    assert forgotten(effects) == [1, 2, 3]
    assert machine.apply(EntryMeta(4), DurableSettle("spark", 3)) == (DurablePosition(3, 5), [])
    assert machine.apply(EntryMeta(5), DurableSettle("spark", 1)) == (DurablePosition(3, 5), [])
    assert machine.stats().messages_unacknowledged == 2


def test_settling_beyond_what_was_handed_out_is_refused_and_changes_nothing() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=2)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 2))
    reply, effects = machine.apply(EntryMeta(3), DurableSettle("spark", 3))
    assert isinstance(reply, Failure) and reply.code == "beyond_sequence"
    assert effects == [] and machine.stats().messages_unacknowledged == 2


def test_reading_a_settled_or_unassigned_range_fails() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=3)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 3))
    machine.apply(EntryMeta(3), DurableSettle("spark", 1))
    with pytest.raises(DurableLogGap):
        machine.durable_log("spark", 0, 2)
    with pytest.raises(DurableLogGap):
        machine.durable_log("spark", 1, 4)
    with pytest.raises(KeyError):
        machine.durable_log("nobody", 0, 0)


def test_a_range_with_a_returned_delivery_fails_to_read() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=3)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 3))
    assert machine.apply(EntryMeta(3), Return((2,), "spark"))[0] == Ok()
    with pytest.raises(DurableLogGap, match="delivery 1"):
        machine.durable_log("spark", 0, 3)


def test_durable_deliveries_outlive_the_lease_and_consumer_down() -> None:
    machine = make_machine(lease_period=100)
    enqueue(machine, 1, count=2)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 2))
    assert machine.next_deadline_ms() is None
    machine.apply(EntryMeta(1_000_000), Tick())
    assert machine.apply(EntryMeta(1_000_001), ConsumerDown("spark"))[0] == Failure(
        "unknown_consumer", "no consumer 'spark'"
    )
    assert [d.id for _, d in machine.durable_log("spark", 0, 2)] == [1, 2]


def test_cancelling_a_durable_consumer_returns_its_messages_with_one_more_delivery() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=2)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 2))
    machine.apply(EntryMeta(3), Cancel("spark"))
    assert [(m.id, m.delivery_count) for m in machine.ready_messages()] == [(1, 1), (2, 1)]
    assert machine.durable_consumers() == []


def test_ordinary_consumers_keep_competing_for_ready_messages() -> None:
    machine = make_machine()
    machine.apply(EntryMeta(1), Checkout("c", prefetch=2))
    _, effects = enqueue(machine, 2, count=5)
    assert delivered(effects, "c") == [1, 2]
    machine.apply(EntryMeta(3), DurableCheckout("spark", 2))
    assert [d.id for _, d in machine.durable_log("spark", 0, 2)] == [3, 4]
    _, effects = machine.apply(EntryMeta(4), Settle((1, 2), "c"))
    assert delivered(effects, "c") == [5]


def test_an_anonymous_settle_cannot_take_a_durable_delivery() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=1)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 1))
    reply, effects = machine.apply(EntryMeta(3), Settle((1,), None))
    assert isinstance(reply, Failure) and forgotten(effects) == []


def test_durable_and_ordinary_consumer_names_do_not_collide() -> None:
    machine = make_machine()
    machine.apply(EntryMeta(1), Checkout("c", prefetch=1))
    machine.apply(EntryMeta(1), DurableCheckout("spark", 0))
    assert machine.apply(EntryMeta(2), DurableCheckout("c", 1))[0].code == "name_in_use"
    assert machine.apply(EntryMeta(2), Checkout("spark", 1))[0].code == "name_in_use"


def test_a_durable_consumer_keeps_the_queue_from_expiring() -> None:
    machine = make_machine(expires=100)
    machine.apply(EntryMeta(1), DurableCheckout("spark", 0))
    assert machine.next_deadline_ms() is None
    machine.apply(EntryMeta(2), Cancel("spark"))
    assert machine.next_deadline_ms() == 102


def test_a_snapshot_keeps_sequence_numbers_and_settled_position() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=4)
    machine.apply(EntryMeta(2), DurableCheckout("spark", 4))
    machine.apply(EntryMeta(3), DurableSettle("spark", 1))
    machine.apply(EntryMeta(4), Get("g", 1, auto_ack=False))
    restored = QueueMachine.restore(machine.snapshot_chunks())
    assert restored.durable_consumers() == machine.durable_consumers()
    assert restored.durable_log("spark", 1, 4) == machine.durable_log("spark", 1, 4)
    assert restored.apply(EntryMeta(5), DurableCheckout("spark", 1)) == machine.apply(
        EntryMeta(5), DurableCheckout("spark", 1)
    )


def test_a_checkout_since_a_time_numbers_only_newer_messages_and_leaves_older_ones_ready() -> None:
    machine = make_machine()
    enqueue(machine, 100, count=2)  # ids 1, 2
    enqueue(machine, 200, count=3)  # ids 3, 4, 5
    assert machine.apply(EntryMeta(300), DurableCheckout("spark", 10, since_ms=200))[0] == DurablePosition(
        0, 3, 30
    )
    assert [d.id for _, d in machine.durable_log("spark", 0, 3)] == [3, 4, 5]
    assert [m.id for m in machine.ready_messages()] == [1, 2]
    enqueue(machine, 400, count=1)  # id 6
    assert machine.apply(EntryMeta(500), DurableCheckout("spark", 10, since_ms=200))[0] == DurablePosition(
        0, 4, 10
    )
    assert [m.id for m in machine.ready_messages()] == [1, 2]


def test_a_checkout_by_bytes_stops_at_the_first_message_that_does_not_fit_but_takes_at_least_one() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=1, size=50)  # id 1: larger than the budget
    enqueue(machine, 1, count=4, size=10)  # ids 2-5
    assert machine.apply(EntryMeta(2), DurableCheckout("spark", 10, max_bytes=25))[0] == DurablePosition(
        0, 1, 50
    )
    assert machine.apply(EntryMeta(3), DurableCheckout("spark", 10, max_bytes=25))[0] == DurablePosition(
        0, 3, 20
    )
    assert machine.apply(EntryMeta(4), DurableCheckout("spark", 1, max_bytes=1000))[0] == DurablePosition(
        0, 4, 10
    )
    assert [d.id for _, d in machine.durable_log("spark", 0, 4)] == [1, 2, 3, 4]


def test_a_checkout_since_a_time_and_by_bytes_applies_both() -> None:
    machine = make_machine()
    enqueue(machine, 100, count=2, size=10)  # ids 1, 2: too old
    enqueue(machine, 200, count=3, size=10)  # ids 3-5
    reply, _ = machine.apply(EntryMeta(300), DurableCheckout("spark", 10, since_ms=150, max_bytes=20))
    assert reply == DurablePosition(0, 2, 20)
    assert [d.id for _, d in machine.durable_log("spark", 0, 2)] == [3, 4]
    assert [m.id for m in machine.ready_messages()] == [1, 2, 5]


def test_browsing_lists_ready_and_checked_out_messages_by_id_and_changes_nothing() -> None:
    machine = make_machine()
    enqueue(machine, 1, count=6)  # ids 1-6
    machine.apply(EntryMeta(2), DurableCheckout("spark", 2))  # 1, 2 held by a durable consumer
    machine.apply(EntryMeta(3), Get("reader", 1, auto_ack=False))  # 3 held by a get
    machine.apply(EntryMeta(4), Return((3,), None))  # 3 back, at the head of the returns
    before = (machine.stats(), list(machine.ready_messages()), machine.durable_consumers())
    assert [d.id for d in machine.browse(0, 100, 10)] == [1, 2, 3, 4, 5, 6]
    assert [(d.id, d.redelivered) for d in machine.browse(2, 5, 10)] == [(2, False), (3, True), (4, False)]
    assert [d.id for d in machine.browse(0, 100, 2)] == [1, 2]
    assert (machine.stats(), list(machine.ready_messages()), machine.durable_consumers()) == before
