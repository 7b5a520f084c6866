"""A guarded delete is decided in the queue's log by `Seal`, in the step that stops publishes (issue 17,
finding 4).

`Seal(if_empty, if_unused)` answers Ok and seals the queue when its conditions hold in the applied
state, else a Failure that changes nothing; a sealed queue refuses every later Enqueue and new consumer.
"""

from __future__ import annotations

import msgpack
from queue_state_helpers import enqueue, make_machine

from queue_state.command_codec import decode_command, encode_command
from queue_state.commands import Cancel, Checkout, DurableCheckout, EntryMeta, Get, Seal
from queue_state.effects import Deliveries, Enqueued, Failure, Ok
from queue_state.machine import QUEUE_DELETING, QueueMachine
from queue_state.snapshot import SNAPSHOT_VERSION


def test_rule_a_publish_applied_after_the_seal_is_refused() -> None:
    m = make_machine()
    assert m.apply(EntryMeta(1), Seal(if_empty=True, if_unused=False))[0] == Ok()
    reply, effects = enqueue(m, 2, count=3)
    assert reply == Failure(QUEUE_DELETING, "queue 'q' is being deleted")
    assert effects == [] and m.stats().messages == 0 and m.next_id == 1


def test_rule_a_publish_applied_before_the_seal_makes_if_empty_refuse_and_keeps_the_queue_open() -> None:
    m = make_machine()
    assert isinstance(enqueue(m, 1)[0], Enqueued)
    refused = m.apply(EntryMeta(2), Seal(if_empty=True, if_unused=False))[0]
    assert refused == Failure("not_empty", "queue 'q' is not empty")
    assert isinstance(enqueue(m, 3)[0], Enqueued)
    assert m.stats().messages == 2


def test_rule_if_empty_counts_checked_out_messages() -> None:
    m = make_machine()
    enqueue(m, 1)
    m.apply(EntryMeta(2), Get("h", 1, auto_ack=False))
    assert m.stats().messages_ready == 0
    assert isinstance(m.apply(EntryMeta(3), Seal(if_empty=True, if_unused=False))[0], Failure)


def test_rule_if_unused_refuses_while_a_consumer_is_registered_and_a_seal_refuses_new_ones() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), Checkout("c", prefetch=1))
    refused = m.apply(EntryMeta(2), Seal(if_empty=False, if_unused=True))[0]
    assert refused == Failure("in_use", "queue 'q' has consumers")
    m.apply(EntryMeta(3), Cancel("c"))
    enqueue(m, 4)
    assert m.apply(EntryMeta(5), Seal(if_empty=False, if_unused=True))[0] == Ok()  # not empty, but unused
    assert m.apply(EntryMeta(6), Checkout("late", prefetch=1))[0].code == QUEUE_DELETING
    assert m.apply(EntryMeta(6), DurableCheckout("spark", 1))[0].code == QUEUE_DELETING
    assert m.consumers() == [] and m.durable_consumers() == []
    assert isinstance(
        m.apply(EntryMeta(7), Get("h", 1, auto_ack=True))[0], Deliveries
    )  # what is there can be read


def test_rule_a_seal_is_for_good_and_answers_ok_again() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), Seal(if_empty=True, if_unused=True))
    assert m.sealed
    assert m.apply(EntryMeta(2), Seal(if_empty=True, if_unused=True))[0] == Ok()
    assert isinstance(enqueue(m, 3)[0], Failure)


def test_rule_the_seal_survives_a_snapshot() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), Seal(if_empty=True, if_unused=False))
    restored = QueueMachine.restore(m.snapshot_chunks())
    assert restored.sealed
    assert isinstance(enqueue(restored, 2)[0], Failure)


def test_a_version_1_snapshot_restores_unsealed() -> None:
    m = make_machine()
    enqueue(m, 1, count=2)
    chunks = list(m.snapshot_chunks())
    header = msgpack.unpackb(chunks[0], raw=False)
    assert header["version"] == 2 and SNAPSHOT_VERSION > 1  # no reader: written as version 2
    del header["sealed"]
    old = [msgpack.packb({**header, "version": 1}), *chunks[1:]]
    restored = QueueMachine.restore(old)
    assert not restored.sealed and restored.stats() == m.stats()
    assert isinstance(enqueue(restored, 2)[0], Enqueued)


def test_seal_round_trips_on_the_wire_as_tag_16() -> None:
    seal = Seal(if_empty=True, if_unused=False)
    assert encode_command(seal) == [16, {"if_empty": True, "if_unused": False}]
    assert decode_command(encode_command(seal)) == seal
