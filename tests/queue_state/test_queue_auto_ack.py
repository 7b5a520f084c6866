"""Auto-ack consumers (AMQP's no-ack, queue operations version 9): the state records the flag so that
any leader settles what such a consumer is handed; until that Settle its deliveries are held as any
consumer's, its prefetch bounding them."""

import msgpack
from queue_state_helpers import delivered, enqueue, make_machine

from queue_state.commands import Checkout, EntryMeta, Get, Return, Settle
from queue_state.effects import Acked, Failure
from queue_state.machine import QueueMachine


def test_an_auto_ack_consumer_is_served_up_to_its_prefetch_and_said_to_be_auto_ack() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), Checkout("c", 2, auto_ack=True))
    _, effects = enqueue(m, 2, count=5)
    assert delivered(effects, "c") == [1, 2]
    [info] = m.consumers()
    assert (info.auto_ack, info.unacknowledged) == (True, 2)
    _, effects = m.apply(EntryMeta(3), Settle((1, 2), "c"))
    assert delivered(effects, "c") == [3, 4]
    assert m.stats().messages == 3


def test_rule_a_settle_answers_exactly_the_ids_it_settled() -> None:
    """An auto-ack consumer's leader answers a poll with what its Settle settled: the reply names those
    ids, not every id the queue no longer holds (another may have taken it)."""
    m = make_machine()
    m.apply(EntryMeta(1), Checkout("c", 1, auto_ack=True))
    enqueue(m, 2, count=2)  # c is handed 1
    m.apply(EntryMeta(3), Return((1,), "c", failed=False))  # 1 goes back behind 2: c is handed 2
    m.apply(EntryMeta(4), Get("other", 1, auto_ack=True))  # another takes 1 for good
    reply, _ = m.apply(EntryMeta(5), Settle((1, 2), "c"))
    assert reply == Acked((2,), Failure("unknown_ids", "not checked out: [1]"))
    assert m.stats().messages == 0
    assert m.apply(EntryMeta(6), Settle((2,), "c"))[0] == Failure("unknown_ids", "not checked out: [2]")
    assert m.apply(EntryMeta(7), Settle((3,), "nobody"))[0].code == "unknown_consumer"


def test_registering_again_without_auto_ack_makes_it_a_consumer_that_settles() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), Checkout("c", 2, auto_ack=True))
    m.apply(EntryMeta(2), Checkout("c", 2))
    assert [info.auto_ack for info in m.consumers()] == [False]


def test_a_snapshot_keeps_auto_ack_in_version_9_and_only_while_such_a_consumer_is_there() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), Checkout("plain", 1))
    m.apply(EntryMeta(2), Checkout("auto", 3, 1, 500, auto_ack=True))
    enqueue(m, 3, count=4)
    chunks = list(m.snapshot_chunks())
    header = msgpack.unpackb(chunks[0])
    assert header["version"] == 9
    assert [row[-1] for row in header["consumers"]["consumers"]] == [None, True]
    restored = QueueMachine.restore(chunks)
    assert restored.consumers() == m.consumers()
    assert list(restored.snapshot_chunks()) == chunks
    m.apply(EntryMeta(4), Checkout("auto", 3, 1, 500))
    assert msgpack.unpackb(next(iter(m.snapshot_chunks())))["version"] < 9
