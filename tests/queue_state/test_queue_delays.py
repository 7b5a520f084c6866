"""Delays (issue 22, feature 2): a publish's delay, a nack's delay and the queue's delayed retry; a
delayed message waits inside the queue, keeps its FIFO place once due, and survives a snapshot."""

from __future__ import annotations

import msgpack
import pytest
from queue_state_helpers import dead_lettered, delivered, make_machine

from queue_state.arguments import parse_arguments
from queue_state.command_codec import arguments_version, decode_command, encode_command, encode_command_v0
from queue_state.commands import (
    Checkout,
    Enqueue,
    EntryMeta,
    Get,
    NewMessage,
    Purge,
    Return,
    Seal,
    Tick,
    UpdateConfig,
)
from queue_state.effects import Failure
from queue_state.machine import QueueMachine
from queue_state.messages import NO_EXPIRY


def publish(machine: QueueMachine, now: int, *delays: int | None, ttl: int | None = None) -> list[int]:
    reply, _ = machine.apply(EntryMeta(now), Enqueue(tuple(NewMessage(10, ttl, d) for d in delays)))
    return list(reply.ids)


def test_a_delayed_publish_waits_then_takes_its_fifo_place_by_id() -> None:
    m = make_machine()
    assert publish(m, 0, None, 100, None) == [1, 2, 3]
    assert [r.id for r in m.ready_messages()] == [1, 3]
    stats = m.stats()
    assert (stats.messages_ready, stats.messages_delayed, stats.messages) == (2, 1, 3)
    assert m.next_deadline_ms() == 100
    m.apply(EntryMeta(100), Tick())
    assert [r.id for r in m.ready_messages()] == [1, 2, 3]  # 2 comes before 3 again
    assert m.peek(2).id == 2
    _, effects = m.apply(EntryMeta(101), Checkout("c", prefetch=3))
    assert delivered(effects, "c") == [1, 2, 3]


def test_a_due_message_is_served_after_a_return_and_before_newer_ones() -> None:
    m = make_machine(delivery_limit=5)
    publish(m, 0, None, 50)
    m.apply(EntryMeta(1), Get("h", 1, auto_ack=False))
    m.apply(EntryMeta(2), Return((1,), "h"))  # returns come first
    publish(m, 3, None)
    m.apply(EntryMeta(60), Tick())
    assert [r.id for r in m.ready_messages()] == [1, 2, 3]


def test_a_nack_delay_holds_a_message_back_and_zero_overrides_the_queues_retry() -> None:
    m = make_machine(delayed_retry_type="all", delayed_retry_min=1000)
    publish(m, 0, None, None)
    m.apply(EntryMeta(1), Get("h", 2, auto_ack=False))
    m.apply(EntryMeta(2), Return((1,), "h", delay_ms=30))
    m.apply(EntryMeta(2), Return((2,), "h", failed=False, delay_ms=0))
    assert [r.id for r in m.ready_messages()] == [2]
    assert m.next_deadline_ms() == 32
    _, effects = m.apply(EntryMeta(31), Checkout("c", prefetch=5))
    assert delivered(effects) == [2]
    _, effects = m.apply(EntryMeta(32), Tick())
    assert delivered(effects) == [1]


@pytest.mark.parametrize(
    ("kind", "failed", "delayed"),
    [
        ("all", True, True),
        ("all", False, True),
        ("failed", True, True),
        ("failed", False, False),
        ("returned", False, True),
        ("returned", True, False),
        ("disabled", True, False),
    ],
)
def test_delayed_retry_type_says_which_returns_wait(kind: str, failed: bool, delayed: bool) -> None:
    m = make_machine(delayed_retry_type=kind, delayed_retry_min=100)
    publish(m, 0, None)
    m.apply(EntryMeta(1), Get("h", 1, auto_ack=False))
    m.apply(EntryMeta(2), Return((1,), "h", failed=failed))
    assert m.stats().messages_delayed == int(delayed)


def test_the_retry_delay_doubles_with_each_return_up_to_the_maximum() -> None:
    m = make_machine(delayed_retry_type="failed", delayed_retry_min=100, delayed_retry_max=350)
    publish(m, 0, None)
    now, waits = 0, []
    for _ in range(4):
        m.apply(EntryMeta(now), Get("h", 1, auto_ack=False))
        m.apply(EntryMeta(now), Return((1,), "h"))
        waits.append(m.next_deadline_ms() - now)
        now = m.next_deadline_ms()
        m.apply(EntryMeta(now), Tick())
    assert waits == [100, 200, 350, 350]


def test_the_delivery_limit_dead_letters_before_any_delay() -> None:
    m = make_machine(delivery_limit=0, dead_letter_queue="dlq", delayed_retry_type="all")
    publish(m, 0, None)
    m.apply(EntryMeta(1), Get("h", 1, auto_ack=False))
    _, effects = m.apply(EntryMeta(2), Return((1,), "h", delay_ms=500))
    assert dead_lettered(effects, "delivery_limit") == [1]
    assert m.stats().messages == 0


def test_a_delayed_message_expires_by_its_ttl_counted_from_the_publish() -> None:
    m = make_machine(dead_letter_queue="dlq")
    publish(m, 0, 100, ttl=50)
    _, effects = m.apply(EntryMeta(100), Checkout("c", prefetch=1))
    assert dead_lettered(effects, "expired") == [1]
    assert delivered(effects) == []


def test_purge_removes_delayed_messages_too() -> None:
    m = make_machine()
    publish(m, 0, None, 100)
    reply, _ = m.apply(EntryMeta(1), Purge())
    assert reply.count == 2
    assert m.stats().messages == 0 and m.next_deadline_ms() is None


def test_delayed_and_due_messages_survive_a_snapshot_of_version_5_only() -> None:
    m = make_machine()
    publish(m, 0, None)
    assert msgpack.unpackb(next(iter(m.snapshot_chunks())), raw=False)["version"] == 2
    publish(m, 0, 50, 500)
    m.apply(EntryMeta(60), Tick())  # 2 is due, 3 still waits
    chunks = list(m.snapshot_chunks())
    assert msgpack.unpackb(chunks[0], raw=False)["version"] == 5
    restored = QueueMachine.restore(chunks)
    assert [r.id for r in restored.ready_messages()] == [1, 2]
    assert [r.id for r in restored.delayed_messages()] == [3]
    assert restored.next_deadline_ms() == 500
    assert list(restored.snapshot_chunks()) == chunks


def test_delays_travel_from_operations_version_5_only() -> None:
    later = [
        Enqueue((NewMessage(1), NewMessage(2, None, 40))),
        Return((1,), "c", delay_ms=40),
        UpdateConfig(parse_arguments({"x-delayed-retry-type": "all", "x-delayed-retry-min": 5})),
    ]
    for command in later:
        assert decode_command(encode_command(command, 5)) == command
        with pytest.raises(ValueError):
            encode_command(command, 4)
        with pytest.raises(ValueError):
            encode_command_v0(EntryMeta(0), command)
    assert encode_command(Enqueue((NewMessage(1),)), 1) == [1, {"messages": [[1, None]]}]
    assert arguments_version({"x-delayed-retry-max": 9}) == 5


def test_rule_a_guarded_delete_if_empty_refuses_a_queue_holding_only_delayed_messages() -> None:
    m = make_machine()
    publish(m, 0, 5000)
    reply, _ = m.apply(EntryMeta(1), Seal(if_empty=True, if_unused=False))
    assert isinstance(reply, Failure) and reply.code == "not_empty"


def test_rule_drop_head_drops_the_oldest_message_delayed_or_not() -> None:
    m = make_machine(max_length=2, overflow="drop-head", dead_letter_queue="dlq")
    publish(m, 0, 100_000, 100_000)
    _, effects = m.apply(EntryMeta(1), Enqueue((NewMessage(10), NewMessage(10))))
    assert dead_lettered(effects, "maxlen") == [1, 2]  # the oldest, although they wait
    assert [r.id for r in m.ready_messages()] == [3, 4]


def test_rule_a_read_since_a_time_takes_due_messages_in_their_fifo_place() -> None:
    m = make_machine()
    publish(m, 0, 50, None, None)
    m.apply(EntryMeta(60), Tick())
    assert [r.id for r in m.ready_messages()] == [1, 2, 3]
    reply, _ = m.apply(EntryMeta(61), Get("h", 2, auto_ack=True, since_ms=0))
    assert [d.id for d in reply.deliveries] == [1, 2]
    assert [r.id for r in m.ready_messages()] == [3]


def test_a_delay_past_the_end_of_time_waits_until_then() -> None:
    m = make_machine()
    publish(m, 10, 2**63 - 1)
    assert m.next_deadline_ms() == NO_EXPIRY - 1
    assert list(QueueMachine.restore(m.snapshot_chunks()).snapshot_chunks()) == list(m.snapshot_chunks())


def test_rule_a_delayed_return_goes_where_a_return_goes_when_it_comes_due() -> None:
    m = make_machine()  # no delivery limit: a return goes to main's tail
    publish(m, 0, None, None)
    m.apply(EntryMeta(1), Get("h", 1, auto_ack=False))
    m.apply(EntryMeta(2), Return((1,), "h", delay_ms=10))
    m.apply(EntryMeta(3), UpdateConfig(parse_arguments({"x-delivery-limit": 5})))
    m.apply(EntryMeta(20), Tick())
    assert [r.id for r in m.ready_messages()] == [1, 2]  # to returns, first, as the queue now says


def test_rule_a_run_from_main_stops_at_the_first_id_above_the_due_one_even_after_a_return_to_its_tail() -> (
    None
):
    """Served in runs, main gives only what comes before the first due message by id, up to the first
    that does not (a return went to main's tail without a delivery limit, so its ids need not ascend)."""
    m = make_machine()
    publish(m, 0, None, 50, None)  # 1 ready, 2 waits, 3 ready
    m.apply(EntryMeta(1), Get("h", 1, auto_ack=False))
    m.apply(EntryMeta(2), Return((1,), "h"))  # main: 3, 1
    m.apply(EntryMeta(50), Tick())
    assert [r.id for r in m.ready_messages()] == [2, 3, 1]
    _, effects = m.apply(EntryMeta(51), Checkout("c", prefetch=3))
    assert delivered(effects, "c") == [2, 3, 1]
