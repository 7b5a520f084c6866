"""Touch: a holder extends its hold of checked-out messages (lease extension, issue 22)."""

from __future__ import annotations

import pytest
from queue_state_helpers import enqueue, make_machine

from queue_state.arguments import parse_arguments
from queue_state.command_codec import arguments_version, decode_command, encode_command, encode_command_v0
from queue_state.commands import (
    Checkout,
    DurableCheckout,
    EntryMeta,
    Get,
    Settle,
    Tick,
    Touch,
    UpdateConfig,
)
from queue_state.effects import Acked, Failure, Ok
from queue_state.machine import QueueMachine


def test_a_touch_restarts_the_lease_of_the_touched_messages_only() -> None:
    m = make_machine(lease_period=100)
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(0), Checkout("c", prefetch=3))
    assert m.apply(EntryMeta(80), Touch((2,), "c"))[0] == Ok()
    assert m.hold_started_ms("c") == 0
    m.apply(EntryMeta(100), Tick())  # 1 and 3 were held from 0: their lease ends; 2's runs to 180
    assert [(d.id, d.delivery_count) for d in m.checked_out("c")] == [(2, 0), (1, 1), (3, 1)]
    assert m.hold_started_ms("c") == 80
    assert m.next_deadline_ms() == 180


def test_a_touched_message_moves_to_the_end_of_the_hold_order() -> None:
    m = make_machine()
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(0), Checkout("c", prefetch=3))
    m.apply(EntryMeta(5), Touch((1,), "c"))
    assert [d.id for d in m.checked_out("c")] == [2, 3, 1]
    m.apply(EntryMeta(6), Touch((2, 3), "c"))
    assert m.hold_started_ms("c") == 5


def test_a_touch_restores_from_a_snapshot_in_hold_order() -> None:
    m = make_machine(lease_period=100)
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(0), Checkout("c", prefetch=2))
    m.apply(EntryMeta(50), Touch((1,), "c"))
    restored = QueueMachine.restore(m.snapshot_chunks())
    assert [d.id for d in restored.checked_out("c")] == [2, 1]
    assert restored.hold_started_ms("c") == 0
    restored.apply(EntryMeta(100), Tick())
    assert restored.hold_started_ms("c") == 50


def test_an_anonymous_touch_extends_a_get_holders_messages() -> None:
    m = make_machine(lease_period=10)
    enqueue(m, 0)
    m.apply(EntryMeta(0), Get("h", count=1, auto_ack=False))
    m.apply(EntryMeta(9), Touch((1,)))
    m.apply(EntryMeta(10), Tick())
    assert [d.id for d in m.checked_out("h")] == [1]
    assert m.hold_started_ms("h") == 9


def test_a_touch_of_ids_not_held_names_them_and_changes_nothing() -> None:
    m = make_machine()
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(0), Checkout("c", prefetch=1))
    reply, _ = m.apply(EntryMeta(1), Touch((1, 2), "c"))
    assert isinstance(reply, Failure) and reply.code == "unknown_ids" and "[2]" in reply.reason
    assert m.hold_started_ms("c") == 1
    reply, _ = m.apply(EntryMeta(2), Touch((1,), "nobody"))
    assert isinstance(reply, Failure) and reply.code == "unknown_consumer"


def test_a_durable_consumers_deliveries_are_known_to_a_touch_and_unchanged() -> None:
    m = make_machine()
    enqueue(m, 0, count=2)
    m.apply(EntryMeta(0), DurableCheckout("d", 2))
    assert m.apply(EntryMeta(1), Touch((1,), "d"))[0] == Ok()
    assert [seq for seq, _ in m.durable_log("d", 0, 2)] == [0, 1]
    reply, _ = m.apply(EntryMeta(2), Touch((1,)))  # anonymous: not a durable consumer's ids
    assert isinstance(reply, Failure) and reply.code == "unknown_ids"
    assert m.apply(EntryMeta(3), Settle((1, 2), "d"))[0] == Acked((1, 2))


def test_touch_travels_from_operations_version_4_only() -> None:
    touch = Touch((1, 2), "c")
    assert decode_command(encode_command(touch, 4)) == touch
    for version in (1, 2, 3):
        with pytest.raises(ValueError):
            encode_command(touch, version)
    with pytest.raises(ValueError):
        encode_command_v0(EntryMeta(0), touch)


def test_a_consumer_timeout_argument_needs_operations_version_4() -> None:
    assert arguments_version({"x-max-length": 1}) == 0
    assert arguments_version({"x-max-length": 1, "x-consumer-timeout": 5000}) == 4
    change = UpdateConfig(parse_arguments({"x-consumer-timeout": 5000}))
    assert decode_command(encode_command(change, 4)) == change
    with pytest.raises(ValueError):
        encode_command(change, 3)
    with pytest.raises(ValueError):
        encode_command_v0(EntryMeta(0), change)
    assert encode_command(UpdateConfig(parse_arguments({"x-max-length": 1})), 1)
