"""The backlog controls (issue 40, slice 4; queue operations version 10): a cap on what the queue has
handed out and not had back (`x-max-unacked`, AMPS's MaxBacklog), discarding low priorities past a mark
(`x-discard-mark` with `x-discard-below-priority`, rsyslog's DiscardMark and DiscardSeverity), one
hand-out per interval (`x-dequeue-interval-ms`, rsyslog's DequeueSlowdown) and a daily window for
hand-outs (`x-dequeue-window`, rsyslog's dequeue time frame), judged on the time the leader stamps."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from queue_state_helpers import dead_lettered, delivered, enqueue, forgotten, make_machine

from queue_state.arguments import parse_arguments
from queue_state.backlog_controls import DISCARDED
from queue_state.command_codec import arguments_version, encode_command, encode_command_v0
from queue_state.commands import (
    ApplyPolicy,
    Checkout,
    DurableCheckout,
    Enqueue,
    EntryMeta,
    Get,
    NewMessage,
    RedriveCheckout,
    Return,
    Settle,
    StartRedrive,
    Tick,
    UpdateConfig,
)
from queue_state.dequeue_window import DAY_MS, MINUTE_MS
from queue_state.effects import Deliveries, Duplicate, Enqueued, Rejected
from queue_state.machine import QueueMachine

BACKLOG_ARGUMENTS = {
    "x-max-unacked": 4,
    "x-discard-mark": 10,
    "x-discard-below-priority": 2,
    "x-dequeue-interval-ms": 100,
    "x-dequeue-window": "22:00-06:00",
}


@pytest.mark.parametrize("argument", sorted(BACKLOG_ARGUMENTS))
def test_rule_the_backlog_controls_travel_from_operations_version_10_only(argument: str) -> None:
    both = {name: BACKLOG_ARGUMENTS[name] for name in ("x-discard-mark", "x-discard-below-priority")}
    arguments = both if argument in both else {argument: BACKLOG_ARGUMENTS[argument]}
    assert arguments_version(arguments) == 10
    policy = ApplyPolicy("p", arguments, 1)
    declared = UpdateConfig(parse_arguments(arguments))
    for command in (policy, declared):
        assert encode_command(command, 10)
        for version in range(1, 10):
            with pytest.raises(ValueError):
                encode_command(command, version)
    with pytest.raises(ValueError):
        encode_command_v0(EntryMeta(0), declared)


DAY = DAY_MS
HOUR = 60 * MINUTE_MS
NOON = 10 * DAY + 12 * HOUR  # some noon, UTC


def held(machine: QueueMachine) -> int:
    return machine.stats().messages_unacknowledged


# x-max-unacked (AMPS's MaxBacklog)


def test_rule_at_the_unacked_cap_nothing_is_handed_out_until_a_settle_makes_room() -> None:
    m = make_machine(max_unacked=3)
    m.apply(EntryMeta(1), Checkout("a", prefetch=5))
    m.apply(EntryMeta(1), Checkout("b", prefetch=5))
    _, effects = enqueue(m, 2, count=10)
    assert sorted(delivered(effects)) == [1, 2, 3] and held(m) == 3
    for auto_ack in (False, True):  # gets included
        reply, _ = m.apply(EntryMeta(3), Get("g", 5, auto_ack))
        assert reply == Deliveries(())
    assert m.next_deadline_ms() is None  # room comes with a settle or a return, not with time
    _, effects = m.apply(EntryMeta(4), Settle((1,), None))
    assert delivered(effects) == [4] and held(m) == 3
    _, effects = m.apply(EntryMeta(5), Return((2,), None, failed=False))
    assert delivered(effects) == [5] and held(m) == 3  # 2 went back behind the others


def test_rule_under_the_cap_each_consumers_prefetch_still_applies() -> None:
    m = make_machine(max_unacked=10)
    m.apply(EntryMeta(1), Checkout("c", prefetch=2))
    _, effects = enqueue(m, 2, count=5)
    assert delivered(effects, "c") == [1, 2]


def test_rule_a_get_or_a_durable_checkout_takes_no_more_than_the_room_under_the_cap() -> None:
    m = make_machine(max_unacked=3)
    enqueue(m, 1, count=10)
    reply, _ = m.apply(EntryMeta(2), Get("g", 2, auto_ack=False))
    assert [d.id for d in reply.deliveries] == [1, 2]
    position, _ = m.apply(EntryMeta(3), DurableCheckout("spark", 5))
    assert (position.settled, position.end) == (0, 1)  # one of five: the cap was one away
    reply, _ = m.apply(EntryMeta(4), Get("g2", 1, auto_ack=True))
    assert reply == Deliveries(())


def test_rule_a_lowered_cap_hands_nothing_out_until_the_queue_is_below_it() -> None:
    m = make_machine()
    m.apply(EntryMeta(1), Checkout("c", prefetch=10))
    enqueue(m, 2, count=6)  # c holds 1..6
    m.apply(EntryMeta(3), UpdateConfig(parse_arguments({"x-max-unacked": 4})))
    enqueue(m, 4, count=2)
    _, effects = m.apply(EntryMeta(5), Settle((1, 2), "c"))
    assert delivered(effects) == [] and held(m) == 4
    _, effects = m.apply(EntryMeta(6), Settle((3,), "c"))
    assert delivered(effects) == [7] and held(m) == 4


def test_rule_a_redrive_task_is_not_held_back_by_the_backlog_controls() -> None:
    """Its worker takes an empty checkout for the end of its task: holding it back would end it early."""
    m = make_machine(max_unacked=1, dequeue_interval_ms=1000, dequeue_window="00:00-00:01")
    enqueue(m, NOON, count=3)
    m.apply(EntryMeta(NOON), StartRedrive("t", "orders"))
    position, _ = m.apply(EntryMeta(NOON + 1), RedriveCheckout("t", 1, 3))
    assert (position.settled, position.end) == (0, 3)


# x-dequeue-interval-ms (rsyslog's DequeueSlowdown)


def test_rule_one_hand_out_per_interval_for_the_whole_queue_woken_by_a_tick() -> None:
    m = make_machine(dequeue_interval_ms=100)
    m.apply(EntryMeta(0), Checkout("a", prefetch=10))
    m.apply(EntryMeta(0), Checkout("b", prefetch=10))
    _, effects = enqueue(m, 1000, count=5)
    assert delivered(effects) == [1]  # the first at once
    assert m.next_deadline_ms() == 1100  # the leader's Tick arrives then
    _, effects = m.apply(EntryMeta(1050), Tick())
    assert delivered(effects) == []
    reply, _ = m.apply(EntryMeta(1099), Get("g", 3, auto_ack=True))
    assert reply == Deliveries(())
    _, effects = m.apply(EntryMeta(1100), Tick())
    assert delivered(effects, "b") == [2]  # round-robin goes on where it was
    reply, _ = m.apply(EntryMeta(1200), Get("g", 3, auto_ack=True))
    assert [d.id for d in reply.deliveries] == [3]  # a get is one hand-out of one
    _, effects = m.apply(EntryMeta(9000), Tick())
    assert delivered(effects) == [4]  # no catching up after a quiet while
    assert m.next_deadline_ms() == 9100


def test_rule_the_interval_wakes_the_queue_only_when_someone_could_take() -> None:
    m = make_machine(dequeue_interval_ms=100, max_unacked=1)
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(0), Get("g", 1, auto_ack=True))
    assert m.next_deadline_ms() is None  # no consumer: a get asks for itself
    m.apply(EntryMeta(10), Checkout("c", prefetch=1))
    assert m.next_deadline_ms() == 100
    m.apply(EntryMeta(100), Tick())
    assert held(m) == 1 and m.next_deadline_ms() is None  # at its prefetch and at the cap
    m.apply(EntryMeta(150), Settle((2,), "c"))
    assert m.next_deadline_ms() == 200


def test_rule_the_interval_wakes_the_queue_for_a_reader_with_room() -> None:
    """A reader takes with gets, never served: its room under its prefetch still wants a Tick, which
    wakes its waiting get."""
    m = make_machine(dequeue_interval_ms=100)
    m.apply(EntryMeta(0), Checkout("r", prefetch=1, since_ms=0))
    enqueue(m, 0, count=3)
    m.apply(EntryMeta(0), Get("r", 1, auto_ack=False))
    assert held(m) == 1 and m.next_deadline_ms() is None  # at its prefetch
    m.apply(EntryMeta(50), Settle((1,), "r"))
    assert m.next_deadline_ms() == 100


def test_rule_a_queue_that_stops_pacing_hands_out_at_once_and_keeps_no_time() -> None:
    m = make_machine(dequeue_interval_ms=1000)
    m.apply(EntryMeta(0), Checkout("c", prefetch=10))
    enqueue(m, 0, count=3)
    _, effects = m.apply(EntryMeta(10), UpdateConfig(parse_arguments({})))
    assert delivered(effects) == [2, 3]
    assert msgpack.unpackb(next(iter(m.snapshot_chunks())))["version"] < 10


# x-dequeue-window (rsyslog's dequeue time frame)


def test_rule_outside_the_window_messages_wait_and_its_opening_wakes_the_queue() -> None:
    m = make_machine(dequeue_window="22:00-06:00")
    m.apply(EntryMeta(NOON), Checkout("c", prefetch=10))
    reply, effects = enqueue(m, NOON, count=2)
    assert isinstance(reply, Enqueued) and delivered(effects) == []  # publishes still taken
    assert m.apply(EntryMeta(NOON), Get("g", 1, auto_ack=True))[0] == Deliveries(())
    opens = 10 * DAY + 22 * HOUR
    assert m.next_deadline_ms() == opens
    _, effects = m.apply(EntryMeta(opens), Tick())
    assert delivered(effects) == [1, 2]
    _, effects = enqueue(m, 11 * DAY + 6 * HOUR - 1, count=1)  # past midnight: still open
    assert delivered(effects) == [3]
    _, effects = enqueue(m, 11 * DAY + 6 * HOUR, count=1)  # closed again
    assert delivered(effects) == [] and m.next_deadline_ms() == 11 * DAY + 22 * HOUR


def test_rule_with_an_interval_and_a_window_the_next_hand_out_waits_for_both() -> None:
    m = make_machine(dequeue_interval_ms=HOUR, dequeue_window="12:00-12:30")
    m.apply(EntryMeta(NOON), Checkout("c", prefetch=10))
    _, effects = enqueue(m, NOON, count=3)
    assert delivered(effects) == [1]
    assert m.next_deadline_ms() == NOON + DAY  # an hour on, the window is closed: tomorrow's noon
    _, effects = m.apply(EntryMeta(NOON + DAY), Tick())
    assert delivered(effects) == [2]


# x-discard-mark with x-discard-below-priority (rsyslog's DiscardMark and DiscardSeverity)


def publish(machine: QueueMachine, now: int, *priorities: int, delay: int | None = None, **kwargs: Any):
    messages = tuple(NewMessage(10, None, delay, priority) for priority in priorities)
    return machine.apply(EntryMeta(now), Enqueue(messages, **kwargs))


def test_rule_at_the_mark_a_publish_below_the_priority_is_dropped_as_it_arrives() -> None:
    m = make_machine(discard_mark=3, discard_below_priority=2)
    publish(m, 1, 0, 0)
    reply, effects = publish(m, 2, 0, 1)  # two ready when it arrived: under the mark, all taken
    assert reply == Enqueued((3, 4)) and m.stats().messages_ready == 4
    reply, effects = publish(m, 3, 0, 1, 2, 5)
    assert reply == Enqueued((5, 6, 7, 8), discarded=(5, 6))  # answered as taken, the discarded named
    assert forgotten(effects) == [5, 6] and not dead_lettered(effects)
    assert [r.id for r in m.ready_messages()] == [8, 7, 4, 1, 2, 3]  # by priority, then id
    assert m.stats().dropped == {DISCARDED: 2}


def test_rule_the_mark_counts_ready_messages_only() -> None:
    m = make_machine(discard_mark=2, discard_below_priority=1)
    m.apply(EntryMeta(0), Checkout("c", prefetch=2))
    publish(m, 1, 0, 0)  # both handed out
    publish(m, 2, 0, delay=1000)  # waiting, not ready
    reply, _ = publish(m, 3, 0)
    assert reply.discarded == () and m.stats().messages_ready == 1


def test_rule_the_mark_counts_no_message_expired_when_the_publish_arrives() -> None:
    m = make_machine(discard_mark=1, discard_below_priority=1, message_ttl=10)
    publish(m, 0, 0)
    reply, effects = publish(m, 100, 0)  # the first expired at 10: none ready
    assert reply.discarded == () and forgotten(effects) == [1]
    assert [r.id for r in m.ready_messages()] == [2]


def test_rule_a_batch_is_judged_as_it_arrives_as_reject_publish_judges_it() -> None:
    m = make_machine(discard_mark=2, discard_below_priority=1)
    publish(m, 1, 0)
    reply, _ = publish(m, 2, 0, 0, 0)  # one ready when it arrived: the batch passes the mark whole
    assert reply.discarded == () and m.stats().messages_ready == 4
    assert publish(m, 3, 0)[0].discarded == (5,)


def test_rule_a_priority_is_judged_as_the_queue_takes_it_and_a_delayed_message_is_no_exception() -> None:
    m = make_machine(max_priority=2, discard_mark=0, discard_below_priority=3)
    reply, _ = publish(m, 1, 200)  # taken as 2, the queue's top: below 3
    assert reply.discarded == (1,)
    reply, _ = publish(m, 2, 0, delay=500)
    assert reply.discarded == (2,) and m.stats().messages == 0 and m.next_deadline_ms() is None


def test_rule_below_priority_0_the_mark_discards_nothing() -> None:
    m = make_machine(discard_mark=0, discard_below_priority=0)
    assert publish(m, 1, 0, 0)[0].discarded == ()


def test_rule_a_retried_publish_is_answered_as_first_and_nothing_is_discarded_twice() -> None:
    m = make_machine(discard_mark=1, discard_below_priority=1)
    publish(m, 1, 5)
    first, _ = publish(m, 2, 0, 3, publisher="p", seq=1)
    assert first == Enqueued((2, 3), discarded=(2,))
    again, effects = publish(m, 3, 0, 3, publisher="p", seq=1)
    assert again == Duplicate((2, 3)) and not forgotten(effects)
    assert m.stats().dropped == {DISCARDED: 1}


def test_rule_a_full_reject_publish_queue_refuses_before_anything_is_discarded() -> None:
    m = make_machine(max_length=1, overflow="reject-publish", discard_mark=1, discard_below_priority=1)
    publish(m, 1, 5)
    assert isinstance(publish(m, 2, 0)[0], Rejected)
    assert m.stats().dropped == {}


# Snapshots


def test_a_paced_queue_snapshots_as_version_10_and_restores_its_pace() -> None:
    m = make_machine(dequeue_interval_ms=100, max_unacked=5, dequeue_window="00:00-23:59")
    m.apply(EntryMeta(0), Checkout("c", prefetch=10))
    assert msgpack.unpackb(next(iter(m.snapshot_chunks())))["version"] < 10  # nothing handed out yet
    enqueue(m, 40, count=3)
    chunks = list(m.snapshot_chunks())
    header = msgpack.unpackb(chunks[0])
    assert (header["version"], header["paced_at"]) == (10, 40)
    restored = QueueMachine.restore(chunks)
    assert restored.config == m.config and restored.next_deadline_ms() == 140
    assert list(restored.snapshot_chunks()) == chunks
    _, effects = restored.apply(EntryMeta(139), Tick())
    assert delivered(effects) == []


def test_rule_a_snapshot_of_an_earlier_version_restores_as_a_queue_that_never_paced() -> None:
    """Only a queue declared or changed at queue operations version 10 paces; its replicas may still
    restore a snapshot written before it paced (of its first hand-out, say): without a time, it hands out
    at once."""
    m = make_machine(dequeue_interval_ms=100)
    m.apply(EntryMeta(0), Checkout("c", prefetch=10, auto_ack=True))
    enqueue(m, 40, count=2)
    header, *rest = list(m.snapshot_chunks())
    old = msgpack.unpackb(header)
    del old["paced_at"]
    restored = QueueMachine.restore([msgpack.packb({**old, "version": 9}), *rest])
    _, effects = restored.apply(EntryMeta(41), Settle((1,), "c"))
    assert delivered(effects) == [2]
