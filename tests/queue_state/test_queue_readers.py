"""Readers: a consumer registered with `Checkout(since_ms=...)` is never served by the serve step; it takes
messages enqueued at or after its time with `Get`s under its name, up to its prefetch, and is kept in the
snapshot (version 3), so a new leader knows its tag, time and prefetch."""

from __future__ import annotations

import msgpack
from queue_state_helpers import delivered, enqueue, make_machine

from queue_state.commands import Cancel, Checkout, ConsumerDown, EntryMeta, Get, Settle
from queue_state.effects import Acked, Deliveries, Ok
from queue_state.machine import QueueMachine


def reader_machine() -> QueueMachine:
    m = make_machine()
    enqueue(m, 10, count=2)  # ids 1, 2: before the reader's time
    m.apply(EntryMeta(20), Checkout("r", 2, timeout_ms=500, since_ms=15))
    enqueue(m, 30, count=3)  # ids 3, 4, 5
    return m


def test_rule_a_reader_is_never_pushed_to() -> None:
    m = reader_machine()
    _, effects = enqueue(m, 31)
    assert delivered(effects) == [] and m.checked_out("r") == []
    info = m.consumers()[0]
    assert (info.name, info.prefetch, info.timeout_ms, info.since_ms) == ("r", 2, 500, 15)
    assert m.stats().consumers == 1


def test_rule_a_reader_gets_from_its_time_up_to_its_prefetch() -> None:
    m = reader_machine()
    reply, _ = m.apply(EntryMeta(40), Get("r", 10, False))  # the reader's time, not the get's
    assert isinstance(reply, Deliveries) and [d.id for d in reply.deliveries] == [3, 4]
    reply, _ = m.apply(EntryMeta(41), Get("r", 10, False))
    assert reply == Deliveries(())  # its prefetch is full
    assert [d.id for d in m.checked_out("r")] == [3, 4] and m.consumers()[0].unacknowledged == 2
    assert m.apply(EntryMeta(42), Settle((3,), "r"))[0] == Acked((3,))
    reply, _ = m.apply(EntryMeta(43), Get("r", 10, False))
    assert [d.id for d in reply.deliveries] == [5]
    assert [m.id for m in m.ready_messages()] == [1, 2]


def test_rule_a_reader_that_cancels_or_goes_down_gives_back_what_it_holds() -> None:
    for leave in (Cancel("r"), ConsumerDown("r")):
        m = reader_machine()
        m.apply(EntryMeta(40), Get("r", 2, False))
        assert m.apply(EntryMeta(41), leave)[0] == Ok()
        assert m.consumers() == [] and sorted(x.id for x in m.ready_messages()) == [1, 2, 3, 4, 5]


def test_rule_registering_again_moves_a_name_between_reader_and_served_consumer() -> None:
    m = reader_machine()
    _, effects = m.apply(EntryMeta(40), Checkout("r", 2))  # no time: served from the head
    assert delivered(effects, "r") == [1, 2]
    m.apply(EntryMeta(41), Checkout("r", 5, since_ms=0))  # a reader again: nothing more is pushed
    _, effects = enqueue(m, 42)
    assert delivered(effects) == []


def test_rule_a_reader_is_never_the_single_active_consumer() -> None:
    m = make_machine(single_active_consumer=True)
    m.apply(EntryMeta(1), Checkout("r", 5, priority=9, since_ms=0))
    m.apply(EntryMeta(2), Checkout("c", 5))
    _, effects = enqueue(m, 3, count=2)
    assert delivered(effects, "c") == [1, 2]
    assert [(c.name, c.active) for c in m.consumers()] == [("r", False), ("c", True)]


def test_rule_a_reader_survives_a_snapshot_written_as_version_3() -> None:
    m = reader_machine()
    m.apply(EntryMeta(40), Get("r", 1, False))
    chunks = list(m.snapshot_chunks())
    assert msgpack.unpackb(chunks[0], raw=False)["version"] == 3
    restored = QueueMachine.restore(chunks)
    assert restored.consumers() == m.consumers() and restored.checked_out("r") == m.checked_out("r")
    assert list(restored.snapshot_chunks()) == chunks
    _, effects = enqueue(restored, 50)
    assert delivered(effects) == []  # still a reader


def test_rule_a_queue_without_a_reader_writes_and_restores_version_2() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), Checkout("c", 1, timeout_ms=700))
    enqueue(m, 2, count=3)
    m.apply(EntryMeta(3), Get("g", 1, False))
    chunks = list(m.snapshot_chunks())
    header = msgpack.unpackb(chunks[0], raw=False)
    assert header["version"] == 2  # as the code before readers wrote it: a version-2 node restores it
    assert header["consumers"]["consumers"] == [["c", 1, 0, 0, 700]]
    restored = QueueMachine.restore(chunks)
    assert restored.consumers() == m.consumers() and restored.get_holders() == ["g"]
    assert restored.consumers()[0].since_ms is None
