"""Priorities (issue 22, feature 1): strict order between levels, FIFO within one, a priority above the
queue's top taken as the top, expiry at every level's heads, returns first within their level, drop-head
from the lowest level, counts per level, and snapshots that keep it all (version 6 only when needed)."""

from __future__ import annotations

import msgpack
import pytest
from queue_state_helpers import dead_lettered, delivered, make_machine

from queue_state.arguments import ArgumentError, parse_arguments
from queue_state.command_codec import arguments_version
from queue_state.commands import (
    Checkout,
    Discard,
    DlxCheckout,
    Enqueue,
    EntryMeta,
    Get,
    NewMessage,
    Return,
    Tick,
)
from queue_state.effects import DeadLetter
from queue_state.machine import QueueMachine


def publish(
    machine: QueueMachine, now: int, *priorities: int, ttl: int | None = None, delay: int | None = None
):
    messages = tuple(NewMessage(10, ttl, delay, priority) for priority in priorities)
    reply, effects = machine.apply(EntryMeta(now), Enqueue(messages))
    return list(reply.ids), effects


def served(machine: QueueMachine, now: int, count: int) -> list[int]:
    _, effects = machine.apply(EntryMeta(now), Checkout("c", prefetch=count))
    return delivered(effects, "c")


def test_the_highest_level_is_served_first_and_each_level_in_publish_order() -> None:
    m = make_machine()
    publish(m, 0, 0, 5, 1, 5, 31, 0, 1)  # ids 1-7
    assert [r.id for r in m.ready_messages()] == [5, 2, 4, 3, 7, 1, 6]
    assert m.peek(1).id == 5 and m.peek(4).id == 3 and m.peek(8) is None
    assert served(m, 1, 7) == [5, 2, 4, 3, 7, 1, 6]


def test_a_priority_above_the_top_is_taken_as_the_top() -> None:
    m = make_machine(max_priority=2)
    publish(m, 0, 9, 2, 255, 1)
    assert [(r.id, r.priority) for r in m.ready_messages()] == [(1, 2), (2, 2), (3, 2), (4, 1)]
    unbounded = make_machine()
    publish(unbounded, 0, 255)
    assert next(unbounded.ready_messages()).priority == 31  # 32 levels without x-max-priority


def test_x_max_priority_is_checked_and_needs_version_6() -> None:
    assert parse_arguments({"x-max-priority": 31}).top_priority == 31
    for wrong in (32, -1, "5"):
        with pytest.raises(ArgumentError, match="x-max-priority"):
            parse_arguments({"x-max-priority": wrong})
    assert arguments_version({"x-max-priority": 3}) == 6


def test_a_returned_message_goes_first_within_its_level_not_above_a_higher_one() -> None:
    m = make_machine(delivery_limit=5)
    publish(m, 0, 1, 1)
    m.apply(EntryMeta(1), Get("h", 1, auto_ack=False))  # takes 1
    publish(m, 2, 3)  # id 3, above
    m.apply(EntryMeta(3), Return((1,), "h"))
    assert [r.id for r in m.ready_messages()] == [3, 1, 2]
    assert served(m, 4, 3) == [3, 1, 2]


def test_expiry_happens_at_every_levels_head() -> None:
    m = make_machine(dead_letter_queue="dlq")
    publish(m, 0, 0, ttl=10)
    publish(m, 0, 4)  # a higher level in front never holds a lower one's expiry back
    assert m.next_deadline_ms() == 11
    _, effects = m.apply(EntryMeta(11), Tick())
    assert dead_lettered(effects, "expired") == [1]
    assert [r.id for r in m.ready_messages()] == [2]


def test_drop_head_drops_the_lowest_level_first() -> None:
    m = make_machine(max_length=3, overflow="drop-head", dead_letter_queue="dlq")
    publish(m, 0, 2, 0, 1)
    _, effects = publish(m, 1, 3)
    assert dead_lettered(effects, "maxlen") == [2]
    _, effects = publish(m, 2, 3)
    assert dead_lettered(effects, "maxlen") == [3]
    _, effects = publish(m, 3, 0)  # a new lowest one is the one to go
    assert dead_lettered(effects, "maxlen") == [6]
    assert [r.id for r in m.ready_messages()] == [4, 5, 1]


def test_drop_head_takes_a_waiting_message_of_a_lower_level_before_a_ready_one() -> None:
    m = make_machine(max_length=2, overflow="drop-head", dead_letter_queue="dlq")
    publish(m, 0, 0, delay=100)  # waiting, level 0
    publish(m, 0, 5)
    _, effects = publish(m, 1, 5)
    assert dead_lettered(effects, "maxlen") == [1]


def test_a_delayed_message_takes_its_place_in_its_own_level_when_due() -> None:
    m = make_machine()
    publish(m, 0, 2, delay=50)  # id 1
    publish(m, 1, 2, 0)  # ids 2, 3
    m.apply(EntryMeta(50), Tick())
    assert [(r.id, r.priority) for r in m.ready_messages()] == [(1, 2), (2, 2), (3, 0)]
    assert served(m, 51, 3) == [1, 2, 3]


def test_stats_count_ready_messages_by_level() -> None:
    m = make_machine()
    publish(m, 0, 0, 0, 7, 3, 7)
    m.apply(EntryMeta(1), Get("h", 1, auto_ack=False))  # a level-7 one, now held
    stats = m.stats()
    assert stats.messages_ready_by_priority == {7: 1, 3: 1, 0: 2}
    assert stats.messages_ready == 4
    plain = make_machine()
    assert plain.stats().messages_ready_by_priority == {}


def test_a_snapshot_keeps_every_level_and_every_priority_in_version_6() -> None:
    m = make_machine(delivery_limit=5, dead_letter_queue="dlq", overflow="reject-publish",
                     dead_letter_strategy="at-least-once")  # fmt: skip
    publish(m, 0, 0, 4, 4, 9)
    publish(m, 0, 6, delay=500)
    m.apply(EntryMeta(1), Checkout("c", prefetch=1))  # holds 4 (level 9)
    m.apply(EntryMeta(2), Get("h", 1, auto_ack=False))  # holds 2 (level 4)
    m.apply(EntryMeta(3), Return((2,), "h"))  # back to level 4's returns
    chunks = list(m.snapshot_chunks())
    assert msgpack.unpackb(chunks[0])["version"] == 6
    restored = QueueMachine.restore(chunks)
    assert list(restored.ready_messages()) == list(m.ready_messages())
    assert restored.delayed_messages() == m.delayed_messages()
    assert restored.checked_out("c") == m.checked_out("c")
    assert [d.priority for d in restored.checked_out("c")] == [9]
    assert restored.stats() == m.stats()
    assert list(restored.snapshot_chunks()) == chunks


def test_a_queue_without_priorities_snapshots_as_before() -> None:
    m = make_machine()
    publish(m, 0, 0, 0)
    assert msgpack.unpackb(next(m.snapshot_chunks()))["version"] == 2
    publish(m, 1, 3)
    m.apply(EntryMeta(2), Get("h", 3, auto_ack=True))  # every message with a priority gone
    assert msgpack.unpackb(next(m.snapshot_chunks()))["version"] == 2


def test_dead_letters_keep_their_priority_at_most_and_at_least_once() -> None:
    at_most = make_machine(dead_letter_queue="dlq", max_length=1, overflow="drop-head")
    publish(at_most, 0, 6)
    _, effects = publish(at_most, 1, 9)
    assert [d.priority for e in effects if isinstance(e, DeadLetter) for d in e.deliveries] == [6]
    at_least = make_machine(
        dead_letter_queue="dlq", dead_letter_strategy="at-least-once", overflow="reject-publish"
    )
    publish(at_least, 0, 3)
    at_least.apply(EntryMeta(1), Get("h", 1, auto_ack=False))
    at_least.apply(EntryMeta(2), Discard((1,), "h"))
    reply, _ = at_least.apply(EntryMeta(3), DlxCheckout("w", 5))
    assert [d.priority for d in reply.deliveries] == [3]


def test_rule_levels_expire_in_level_order_whatever_order_they_were_created_in() -> None:
    """A restored replica creates its levels highest first; the original in the order they were first
    used. Expiry across levels must not follow either, or at-least-once dead letters pend in a
    different order on each replica."""
    original = make_machine(
        dead_letter_queue="dlq", dead_letter_strategy="at-least-once", overflow="reject-publish"
    )
    publish(original, 0, 1, ttl=10)  # level 1 first
    publish(original, 0, 3, ttl=10)
    restored = QueueMachine.restore(original.snapshot_chunks())
    for machine in (original, restored):
        machine.apply(EntryMeta(20), Tick())
    assert original.dead_letter_ids() == restored.dead_letter_ids() == [2, 1]
    assert b"".join(original.snapshot_chunks()) == b"".join(restored.snapshot_chunks())
