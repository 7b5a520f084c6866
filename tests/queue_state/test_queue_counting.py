"""Counting (issue 22, feature 5 and 6): `acquired` counts every hand-out, `delivery_count` only the
failed ones, which alone reach the delivery limit; a reject may carry a reason, kept with the dead
letter; snapshots hold both from version 4 and still restore versions 1-3."""

from __future__ import annotations

import binascii

import msgpack
from queue_state_helpers import dead_lettered, delivered, enqueue, make_machine

from queue_state.commands import (
    Cancel,
    Checkout,
    ConsumerDown,
    Discard,
    DlxCheckout,
    EntryMeta,
    Get,
    Return,
    Tick,
)
from queue_state.effects import DeadLetter, Deliver, Deliveries, Delivery, Effect
from queue_state.machine import QueueMachine


def hand_outs(effects: list[Effect]) -> list[Delivery]:
    return [d for e in effects if isinstance(e, Deliver) for d in e.deliveries]


def counts(delivery: Delivery) -> tuple[int, int, bool]:
    return delivery.delivery_count, delivery.acquired_count, delivery.redelivered


def test_rule_a_plain_return_is_acquired_but_not_failed() -> None:
    m = make_machine(delivery_limit=1)
    m.apply(EntryMeta(1), Checkout("c", 1))
    _, effects = enqueue(m, 2)
    assert counts(hand_outs(effects)[0]) == (0, 0, False)
    for attempt in range(1, 6):  # far beyond the limit: never dead-lettered
        _, effects = m.apply(EntryMeta(2 + attempt), Return((1,), "c", failed=False))
        assert dead_lettered(effects) == [] and counts(hand_outs(effects)[0]) == (0, attempt, True)


def test_rule_a_failed_return_counts_both_and_reaches_the_limit() -> None:
    m = make_machine(delivery_limit=1, dead_letter_queue="dlq")
    m.apply(EntryMeta(1), Checkout("c", 1))
    enqueue(m, 2)
    _, effects = m.apply(EntryMeta(3), Return((1,), "c"))  # failed: the default, as old entries
    assert counts(hand_outs(effects)[0]) == (1, 1, True)
    _, effects = m.apply(EntryMeta(4), Return((1,), "c", failed=False))
    assert counts(hand_outs(effects)[0]) == (1, 2, True)
    _, effects = m.apply(EntryMeta(5), Return((1,), "c", failed=True))
    assert dead_lettered(effects, "delivery_limit") == [1]


def test_rule_cancel_is_a_plain_return_when_it_says_so_and_a_failure_as_old_entries_were() -> None:
    m = make_machine(delivery_limit=0)
    m.apply(EntryMeta(1), Checkout("a", 1))
    enqueue(m, 2)
    m.apply(EntryMeta(3), Cancel("a", failed=False))
    assert [(r.delivery_count, r.acquired) for r in m.ready_messages()] == [(0, 1)]
    m.apply(EntryMeta(4), Checkout("b", 1))
    m.apply(EntryMeta(5), Cancel("b"))  # an old entry: a failure, past limit 0
    assert m.stats().messages == 0 and m.stats().dropped == {"delivery_limit": 1}


def test_rule_a_consumer_down_and_a_lease_expiry_are_failures() -> None:
    m = make_machine(lease_period=10)
    m.apply(EntryMeta(1), Checkout("a", 1))
    enqueue(m, 2)
    m.apply(EntryMeta(3), ConsumerDown("a"))
    assert [(r.delivery_count, r.acquired) for r in m.ready_messages()] == [(1, 1)]
    m.apply(EntryMeta(4), Get("g", 1, False))
    m.apply(EntryMeta(20), Tick())  # the get holder's lease ran out
    assert [(r.delivery_count, r.acquired) for r in m.ready_messages()] == [(2, 2)]


def test_rule_a_delivery_limit_of_minus_one_is_unlimited() -> None:
    m = make_machine(delivery_limit=-1)
    assert m.config.to_arguments()["x-delivery-limit"] == -1
    m.apply(EntryMeta(1), Checkout("c", 1))
    enqueue(m, 2)
    for attempt in range(1, 30):
        _, effects = m.apply(EntryMeta(2 + attempt), Return((1,), "c"))
        assert hand_outs(effects)[0].delivery_count == attempt


def test_rule_a_reject_reason_goes_with_an_at_most_once_dead_letter() -> None:
    m = make_machine(dead_letter_queue="dlq")
    m.apply(EntryMeta(1), Checkout("c", 3))
    enqueue(m, 2, count=3)
    _, effects = m.apply(EntryMeta(3), Discard((1, 2), "c", reason="bad payload"))
    _, plain = m.apply(EntryMeta(4), Discard((3,), "c"))
    letters = [e for e in effects + plain if isinstance(e, DeadLetter)]
    assert [(e.reason, e.reason_text, [d.id for d in e.deliveries]) for e in letters] == [
        ("rejected", "bad payload", [1, 2]),
        ("rejected", None, [3]),
    ]


def test_rule_a_reject_reason_is_kept_with_an_at_least_once_dead_letter_and_its_snapshot() -> None:
    m = make_machine(dead_letter_queue="dlq", dead_letter_strategy="at-least-once", overflow="reject-publish")
    m.apply(EntryMeta(1), Checkout("c", 2))
    enqueue(m, 2, count=2)
    m.apply(EntryMeta(3), Discard((1,), "c", reason="schema v1"))
    m.apply(EntryMeta(4), Discard((2,), "c"))
    restored = QueueMachine.restore(m.snapshot_chunks())
    assert msgpack.unpackb(next(m.snapshot_chunks()), raw=False)["version"] == 4
    reply, _ = restored.apply(EntryMeta(5), DlxCheckout("w", 5))
    assert isinstance(reply, Deliveries)
    assert (reply.reasons, reply.reason_texts) == (("rejected", "rejected"), ("schema v1", None))


def test_rule_a_snapshot_is_version_4_only_when_a_count_or_reason_needs_it() -> None:
    m = make_machine(delivery_limit=5)
    m.apply(EntryMeta(1), Checkout("c", 1))
    enqueue(m, 2, count=2)
    m.apply(EntryMeta(3), Return((1,), "c"))  # failures only: acquired equals the delivery count
    assert msgpack.unpackb(next(m.snapshot_chunks()), raw=False)["version"] == 2
    m.apply(EntryMeta(4), Return((1,), "c", failed=False))
    chunks = list(m.snapshot_chunks())
    assert msgpack.unpackb(chunks[0], raw=False)["version"] == 4
    restored = QueueMachine.restore(chunks)
    assert list(restored.snapshot_chunks()) == chunks
    assert [counts(d) for d in restored.checked_out("c")] == [(1, 2, True)]


# Written by the queue_state of main before counting (commit f8d60b5), snapshot version 2: delivery limit
# 5, at-least-once; consumer "c" holds message 1 (returned twice), get holder "g" holds 4, message 3
# (returned once) and 5 are ready, 2 is a rejected dead letter.
OLD_SNAPSHOT = [
    "8ba776657273696f6e02a46e616d65a36f6c64a6636f6e66696785ac782d71756575652d74797065a671756f72756daa782d6f76"
    "6572666c6f77ae72656a6563742d7075626c697368b0782d64656c69766572792d6c696d697405b3782d646561642d6c6574746572"
    "2d7175657565a3646c71b6782d646561642d6c65747465722d7374726174656779ad61742d6c656173742d6f6e6365a36e6f7712a7"
    "6e6578745f696406ae6c6173745f6163746976655f6d7312b06578706972795f7369676e616c6c6564c2ad646561645f6c657474"
    "6572656481a872656a656374656401a764726f7070656480a9636f6e73756d65727384b16e6578745f726567697374726174696f"
    "6e01a9636f6e73756d6572739195a163010000c0a9726f746174696f6e7391920091a163a6616374697665c0a67365616c6564c2",
    "92a772657475726e7395c4080300000000000000c4080500000000000000c4080a00000000000000c408ffffffffffffff7fc40401"
    "000000",
    "92a46d61696e95c4080500000000000000c4080700000000000000c4081200000000000000c408ffffffffffffff7fc40400000000",
    "92a468656c6493a163c3919601030acf7fffffffffffffff020d",
    "92a468656c6493a167c2919604060acf7fffffffffffffff000f",
    "92ac646561645f6c65747465727383a6776f726b6572c0ab6f75747374616e64696e6790a770656e64696e67919702040acf7fff"
    "ffffffffffff00a872656a6563746564c2",
    "92a3656e64c0",
]


def test_a_snapshot_written_before_counting_restores_with_acquired_equal_to_the_delivery_count() -> None:
    chunks = [binascii.unhexlify(chunk) for chunk in OLD_SNAPSHOT]
    m = QueueMachine.restore(chunks)
    assert [(r.id, r.delivery_count, r.acquired) for r in m.ready_messages()] == [(3, 1, 1), (5, 0, 0)]
    assert [counts(d) for d in m.checked_out("c")] == [(2, 2, True)]
    assert [counts(d) for d in m.checked_out("g")] == [(0, 0, False)]
    assert list(m.snapshot_chunks()) == chunks  # nothing needs version 4: written as it was
    _, effects = m.apply(EntryMeta(30), Cancel("c", failed=False))
    assert delivered(effects) == []
    ready = [(r.id, r.delivery_count, r.acquired) for r in m.ready_messages()]
    assert ready == [(3, 1, 1), (1, 2, 3), (5, 0, 0)]
    reply, _ = m.apply(EntryMeta(31), DlxCheckout("w", 1))
    assert isinstance(reply, Deliveries) and reply.reason_texts == (None,)
