"""The deduplication window by message id (`x-dedupe-window`, `x-dedupe-max`; queue operations version 11):
a message whose id the queue took within the window is not enqueued and is answered with the first one's
id, JetStream's duplicate window and SQS FIFO's deduplication id, judged on the time the leader stamps."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from queue_state_helpers import forgotten, make_machine

from queue_state.arguments import parse_arguments
from queue_state.command_codec import arguments_version, decode_command, encode_command, encode_command_v0
from queue_state.commands import (
    ApplyPolicy,
    Checkout,
    Enqueue,
    EntryMeta,
    InvalidCommand,
    NewMessage,
    Purge,
    Settle,
    Tick,
    UpdateConfig,
)
from queue_state.effects import Duplicate, Enqueued, Rejected
from queue_state.machine import QueueMachine

WINDOW = 60_000


def publish(machine: QueueMachine, now_ms: int, *message_ids: str | None, **kwargs: Any) -> Any:
    """Publish one message per id (None: a message without one); the reply."""
    messages = tuple(NewMessage(10, dedupe_id=message_id) for message_id in message_ids)
    reply, _ = machine.apply(EntryMeta(now_ms), Enqueue(messages, **kwargs))
    return reply


def answered(reply: Enqueued) -> tuple[int, ...]:
    return reply.answered_ids()


def test_a_message_id_taken_within_the_window_is_answered_with_the_first_id_and_not_enqueued() -> None:
    m = make_machine(dedupe_window=WINDOW)
    first = publish(m, 1000, "order-1")
    assert isinstance(first, Enqueued) and answered(first) == (1,) and not first.duplicates
    again, effects = m.apply(EntryMeta(1000 + WINDOW - 1), Enqueue((NewMessage(10, dedupe_id="order-1"),)))
    assert isinstance(again, Enqueued)
    assert again.duplicates == ((0, 1),) and answered(again) == (1,)
    assert forgotten(effects) == list(again.ids)  # the id it was given is never enqueued: its body goes
    stats = m.stats()
    assert stats.messages == 1 and stats.dedupe_ids == 1 and stats.dedupe_refused == 1


def test_once_the_window_passed_the_same_message_id_is_enqueued_again() -> None:
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "order-1")
    later = publish(m, 1000 + WINDOW, "order-1")
    assert isinstance(later, Enqueued) and not later.duplicates and answered(later) == (2,)
    assert m.stats().messages == 2


def test_a_batch_answers_each_duplicate_by_position_and_enqueues_only_the_new_ones() -> None:
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "a", "b")
    reply = publish(m, 2000, "b", None, "c", "c", "a")
    assert isinstance(reply, Enqueued)
    assert reply.ids == (3, 4, 5, 6, 7)
    assert dict(reply.duplicates) == {0: 2, 3: 5, 4: 1}  # "c" twice in one batch: the second is a duplicate
    assert answered(reply) == (2, 4, 5, 5, 1)
    _got, _ = m.apply(EntryMeta(2000), Checkout("c1", prefetch=10))
    assert m.stats().messages == 4
    assert [d.id for d in m.checked_out("c1")] == [1, 2, 4, 5]


def test_a_message_id_taken_while_already_acked_is_still_a_duplicate() -> None:
    """The window remembers what was published, not what the queue still holds (JetStream's rule)."""
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "x")
    m.apply(EntryMeta(1000), Checkout("c", prefetch=1))
    m.apply(EntryMeta(1001), Settle((1,), "c"))
    reply = publish(m, 1002, "x")
    assert isinstance(reply, Enqueued) and reply.duplicates == ((0, 1),)
    assert m.stats().messages == 0


def test_a_publisher_seq_resend_is_answered_as_first_answered_with_its_duplicates() -> None:
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "a")
    first = publish(m, 2000, "a", "b", publisher="p", seq=1)
    assert isinstance(first, Enqueued) and answered(first) == (1, 3)
    resend = publish(m, 3000, "a", "b", publisher="p", seq=1)
    assert resend == Duplicate((1, 3), ((0, 1),))
    assert m.stats().messages == 2


def test_a_full_reject_publish_queue_still_answers_a_publish_of_duplicates_only() -> None:
    m = make_machine(dedupe_window=WINDOW, max_length=1, overflow="reject-publish")
    publish(m, 1000, "a")
    duplicate = publish(m, 1001, "a")
    assert isinstance(duplicate, Enqueued) and answered(duplicate) == (1,)
    assert isinstance(publish(m, 1002, "a", "b"), Rejected)
    assert m.stats().dedupe_ids == 1  # a refused publish takes no message id


def test_the_window_holds_at_most_x_dedupe_max_ids_evicting_the_oldest() -> None:
    m = make_machine(dedupe_window=WINDOW, dedupe_max=3)
    publish(m, 1000, "a", "b", "c", "d")
    stats = m.stats()
    assert stats.dedupe_ids == 3 and stats.dedupe_evicted == 1
    reply = publish(m, 1001, "a", "d")  # "a" was evicted: enqueued again, and evicts "b"
    assert isinstance(reply, Enqueued) and dict(reply.duplicates) == {1: 4}
    assert m.stats().dedupe_evicted == 2


def test_the_window_forgets_its_ids_on_tick_once_the_window_passed() -> None:
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "a")
    publish(m, 5000, "b")
    m.apply(EntryMeta(1000 + WINDOW), Tick())
    assert m.stats().dedupe_ids == 1
    m.apply(EntryMeta(5000 + WINDOW), Tick())
    assert m.stats().dedupe_ids == 0


def test_a_queue_without_a_window_ignores_message_ids_and_one_that_loses_its_window_forgets_them() -> None:
    plain = make_machine()
    publish(plain, 1000, "a")
    assert isinstance(publish(plain, 1001, "a"), Enqueued) and plain.stats().messages == 2
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "a")
    m.apply(EntryMeta(1001), UpdateConfig(parse_arguments({})))
    assert m.stats().dedupe_ids == 0
    m.apply(EntryMeta(1002), UpdateConfig(parse_arguments({"x-dedupe-window": WINDOW})))
    reply = publish(m, 1003, "a")
    assert isinstance(reply, Enqueued) and not reply.duplicates


def test_a_policy_can_set_the_window() -> None:
    m = make_machine()
    m.apply(EntryMeta(0), ApplyPolicy("dedupe", {"x-dedupe-window": WINDOW}, 1))
    publish(m, 1000, "a")
    reply = publish(m, 1001, "a")
    assert isinstance(reply, Enqueued) and reply.duplicates == ((0, 1),)


def test_purge_keeps_the_window() -> None:
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "a")
    m.apply(EntryMeta(1001), Purge())
    reply = publish(m, 1002, "a")
    assert isinstance(reply, Enqueued) and reply.duplicates == ((0, 1),)


def test_rule_the_window_survives_a_snapshot_and_is_written_as_version_11_only_when_used() -> None:
    m = make_machine(dedupe_window=WINDOW, dedupe_max=2)
    publish(m, 1000, None)
    assert msgpack.unpackb(next(iter(m.snapshot_chunks())))["version"] < 11
    publish(m, 1000, "a", "b", "c", "a")
    chunks = list(m.snapshot_chunks())
    assert msgpack.unpackb(chunks[0])["version"] == 11
    restored = QueueMachine.restore(chunks)
    assert list(restored.snapshot_chunks()) == chunks
    assert restored.stats().dedupe_ids == 2 and restored.stats().dedupe_evicted == 1
    assert restored.stats().dedupe_refused == 1
    reply = publish(restored, 1001, "c", "a")
    assert isinstance(reply, Enqueued) and dict(reply.duplicates) == {0: 4}


@pytest.mark.parametrize("arguments", [{"x-dedupe-window": WINDOW}, {"x-dedupe-max": 10}])
def test_rule_the_window_travels_from_operations_version_11_only(arguments: dict[str, Any]) -> None:
    assert arguments_version(arguments) == 11
    for command in (ApplyPolicy("p", arguments, 1), UpdateConfig(parse_arguments(arguments))):
        assert encode_command(command, 11)
        for version in range(1, 11):
            with pytest.raises(ValueError):
                encode_command(command, version)


def test_rule_a_message_id_travels_from_operations_version_11_only_and_decodes_back() -> None:
    command = Enqueue((NewMessage(5, 100, None, 3, "order-7"), NewMessage(6)), "p", 4)
    wire = encode_command(command, 11)
    assert decode_command(msgpack.unpackb(msgpack.packb(wire))) == command
    for version in range(1, 11):
        with pytest.raises(ValueError):
            encode_command(command, version)
    with pytest.raises(ValueError):
        encode_command_v0(EntryMeta(0), command)


@pytest.mark.parametrize("bad", ["", "x" * 257, 7])
def test_a_message_id_is_short_text(bad: Any) -> None:
    with pytest.raises(InvalidCommand):
        NewMessage(1, dedupe_id=bad)


def test_rule_a_seq_retry_is_answered_as_first_answered_after_the_window_let_the_id_go() -> None:
    """Review finding: a (publisher, seq) retry was answered from the window as it is now, so once the
    window let the id go it named the id its duplicate was given (never enqueued), or another message's."""
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "x")
    first = publish(m, 2000, "x", publisher="p", seq=5)
    assert isinstance(first, Enqueued) and answered(first) == (1,)
    assert publish(m, 1000 + WINDOW + 10, "y") is not None  # the window lets "x" go
    assert publish(m, 1000 + WINDOW + 11, "x", publisher="p", seq=5) == Duplicate((1,), ((0, 1),))
    publish(m, 1000 + WINDOW + 12, "x")  # another message takes "x" again
    assert publish(m, 1000 + WINDOW + 13, "x", publisher="p", seq=5) == Duplicate((1,), ((0, 1),))


def test_rule_a_seq_retry_answers_survive_a_snapshot() -> None:
    m = make_machine(dedupe_window=WINDOW)
    publish(m, 1000, "x")
    publish(m, 2000, "x", None, publisher="p", seq=1)
    restored = QueueMachine.restore(m.snapshot_chunks())
    assert publish(restored, 3000, "x", None, publisher="p", seq=1) == Duplicate((1, 3), ((0, 1),))


def test_rule_a_message_dropped_as_it_arrived_takes_no_id_in_the_window() -> None:
    """Review finding: a message discarded at the discard mark kept its id in the window, so its resend
    was refused for good although the queue never held it."""
    m = make_machine(dedupe_window=WINDOW, discard_mark=1, discard_below_priority=1)
    publish(m, 1000, None)
    dropped = publish(m, 1001, "low")
    assert isinstance(dropped, Enqueued) and dropped.discarded == dropped.ids
    m.apply(EntryMeta(1002), Purge())
    resent = publish(m, 1003, "low")
    assert isinstance(resent, Enqueued) and not resent.duplicates and not resent.discarded


def test_rule_a_message_dropped_as_it_arrived_makes_no_later_one_of_its_batch_a_duplicate() -> None:
    """Found by the stateful model: of two messages of one batch with one id, the first dropped at the
    discard mark, the second (at a priority kept) was refused as its duplicate, so neither was enqueued."""
    m = make_machine(dedupe_window=WINDOW, discard_mark=0, discard_below_priority=1)
    messages = (NewMessage(10, dedupe_id="b"), NewMessage(10, priority=5, dedupe_id="b"))
    reply, _ = m.apply(EntryMeta(1000), Enqueue(messages))
    assert isinstance(reply, Enqueued)
    assert reply.discarded == (1,) and reply.duplicates == ()
    assert m.stats().messages == 1 and m.stats().dedupe_ids == 1
