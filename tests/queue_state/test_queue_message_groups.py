"""Ordered message groups (`x-message-groups`; queue operations version 13): at most one unsettled message
of a group at a time, in group order, different groups to different consumers in parallel and in turn,
as SQS FIFO's MessageGroupId and Artemis's JMSXGroupID order them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest
from queue_state_helpers import dead_lettered, delivered, forgotten, make_machine

from queue_state.arguments import parse_arguments
from queue_state.command_codec import arguments_version, decode_command, encode_command
from queue_state.commands import (
    ApplyPolicy,
    Cancel,
    Checkout,
    ConsumerDown,
    Discard,
    DurableCheckout,
    DurableSettle,
    Enqueue,
    EntryMeta,
    Get,
    InvalidCommand,
    NewMessage,
    Purge,
    Return,
    Settle,
    Tick,
)
from queue_state.effects import Deliveries, Effect, Enqueued, Failure
from queue_state.machine import DELAYED_IN_A_GROUP, QueueMachine
from queue_state.message_groups import MAX_GROUP_BYTES


def grouped(**arguments: Any) -> QueueMachine:
    return make_machine(message_groups=True, **arguments)


def publish(machine: QueueMachine, now_ms: int, *groups: str | None, **fields: Any) -> list[Effect]:
    """Publish one message per group (None: a message without one); the effects."""
    messages = tuple(NewMessage(10, group=group, **fields) for group in groups)
    _, effects = machine.apply(EntryMeta(now_ms), Enqueue(messages))
    return effects


def apply(machine: QueueMachine, now_ms: int, command: Any) -> list[Effect]:
    return machine.apply(EntryMeta(now_ms), command)[1]


def test_a_group_has_one_message_out_at_a_time_and_the_next_goes_once_it_is_settled() -> None:
    m = grouped()
    publish(m, 1, "a", "a", "a")
    assert delivered(apply(m, 2, Checkout("c", prefetch=10))) == [1]
    stats = m.stats()
    assert (stats.messages_ready, stats.groups, stats.groups_blocked) == (2, 1, 1)
    assert delivered(apply(m, 3, Settle((1,), "c"))) == [2]
    assert delivered(apply(m, 4, Settle((2,), "c"))) == [3]
    apply(m, 5, Settle((3,), "c"))
    assert (m.stats().groups, m.stats().groups_blocked) == (0, 0)


def test_groups_go_to_consumers_in_parallel_each_its_own_group() -> None:
    m = grouped()
    apply(m, 0, Checkout("c1", prefetch=10))
    apply(m, 0, Checkout("c2", prefetch=10))
    effects = publish(m, 1, "a", "a", "b", "b", "c")
    assert sorted(delivered(effects)) == [1, 3, 5]  # each group's first, one group each
    first_of = {d.id: e.consumer for e in effects if hasattr(e, "consumer") for d in e.deliveries}
    assert first_of[1] != first_of[3]  # two consumers, two groups at once


def test_groups_take_turns_so_a_long_group_never_holds_back_a_short_one() -> None:
    """Groups go in turn, each to the back of the ring once its head is settled."""
    m = grouped()
    publish(m, 1, *["long"] * 5, "short")
    order = []
    apply(m, 2, Checkout("c", prefetch=1))
    for now in range(3, 9):
        held = [d.id for d in m.checked_out("c")]
        order += held
        apply(m, now, Settle(tuple(held), "c"))
    assert order == [1, 6, 2, 3, 4, 5]  # the short group's one message goes second, not last


def test_a_returned_message_goes_back_to_the_head_of_its_group_and_out_again_first() -> None:
    m = grouped()
    publish(m, 1, "a", "a", "b")
    apply(m, 2, Checkout("c", prefetch=1))
    assert [d.id for d in m.checked_out("c")] == [1]
    effects = apply(m, 3, Return((1,), "c"))
    assert delivered(effects) == [3]  # b's turn came while 1 was out: a waits at the back of the ring
    effects = apply(m, 4, Settle((3,), "c"))
    assert delivered(effects) == [1]  # 1 again, before 2
    assert [d.redelivered for d in m.checked_out("c")] == [True]


def test_a_message_back_after_a_delay_keeps_its_group_blocked_until_its_time() -> None:
    m = grouped()
    publish(m, 1, "a", "a")
    apply(m, 2, Checkout("c", prefetch=10))
    effects = apply(m, 3, Return((1,), "c", delay_ms=100))
    assert delivered(effects) == [] and m.stats().groups_blocked == 1  # 2 stays behind the delayed 1
    assert delivered(apply(m, 50, Tick())) == []
    assert delivered(apply(m, 103, Tick())) == [1]


def test_a_consumer_gone_or_a_lease_expired_returns_the_head_to_its_group() -> None:
    m = grouped(lease_period=100)
    publish(m, 1, "a", "a")
    apply(m, 2, Checkout("c", prefetch=10))
    assert delivered(apply(m, 3, ConsumerDown("c"))) == []
    assert delivered(apply(m, 4, Checkout("d", prefetch=10))) == [1]  # 1 again, never 2 first
    assert delivered(apply(m, 200, Tick())) == [1]  # the lease expired: 1 again, to d


def test_a_rejected_or_poisoned_message_frees_its_group() -> None:
    m = grouped(delivery_limit=1)
    publish(m, 1, "a", "a", "a")
    apply(m, 2, Checkout("c", prefetch=10))
    assert delivered(apply(m, 3, Discard((1,), "c"))) == [2]  # dead-lettered: the group goes on
    assert delivered(apply(m, 4, Return((2,), "c"))) == [2]  # one failure: within the limit
    effects = apply(m, 5, Return((2,), "c"))  # past the delivery limit: dropped, the group goes on
    assert m.stats().dropped == {"rejected": 1, "delivery_limit": 1}
    assert delivered(effects) == [3]


def test_messages_without_a_group_are_not_held_back_by_anything() -> None:
    m = grouped()
    publish(m, 1, "a", "a", None, None)
    assert delivered(apply(m, 2, Checkout("c", prefetch=10))) == [1, 3, 4]


def test_a_group_on_a_queue_without_message_groups_orders_nothing() -> None:
    m = make_machine()
    publish(m, 1, "a", "a", "a")
    assert delivered(apply(m, 2, Checkout("c", prefetch=10))) == [1, 2, 3]
    assert m.stats().groups == 0


def test_priorities_order_the_heads_of_groups_never_the_messages_within_one() -> None:
    m = grouped()
    _, _ = m.apply(
        EntryMeta(1),
        Enqueue(
            (
                NewMessage(10, group="a"),
                NewMessage(10, group="a", priority=5),
                NewMessage(10, group="b", priority=3),
                NewMessage(10, priority=1),
            )
        ),
    )
    apply(m, 2, Checkout("c", prefetch=1))
    order = []
    for now in range(3, 7):
        held = [d.id for d in m.checked_out("c")]
        order += held
        apply(m, now, Settle(tuple(held), "c"))
    assert order == [3, 4, 1, 2]  # b's head (3) first, the ungrouped 1 next, a in its own order
    assert m.stats().messages_ready_by_priority == {}


def test_stats_count_grouped_messages_by_priority_with_the_others() -> None:
    m = grouped()
    m.apply(
        EntryMeta(1),
        Enqueue((NewMessage(7, group="a", priority=2), NewMessage(5, group="a"), NewMessage(3, priority=2))),
    )
    stats = m.stats()
    assert stats.messages_ready == 3 and stats.message_bytes_ready == 15
    assert stats.messages_ready_by_priority == {2: 2, 0: 1}
    assert (stats.groups, stats.groups_blocked) == (1, 0)


def test_a_get_takes_heads_only_and_blocks_their_groups() -> None:
    m = grouped()
    publish(m, 1, "a", "a", "b")
    reply, _ = m.apply(EntryMeta(2), Get("h", 10, auto_ack=False))
    assert isinstance(reply, Deliveries) and [d.id for d in reply.deliveries] == [1, 3]
    reply, _ = m.apply(EntryMeta(3), Get("h", 10, auto_ack=True))
    assert isinstance(reply, Deliveries) and reply.deliveries == ()
    apply(m, 4, Settle((1,), "h"))
    reply, _ = m.apply(EntryMeta(5), Get("g", 10, auto_ack=True))
    assert isinstance(reply, Deliveries) and [d.id for d in reply.deliveries] == [2]
    assert m.stats().groups == 1  # only b, whose 3 is still out


def test_a_get_since_a_time_takes_the_heads_enqueued_since() -> None:
    m = grouped()
    publish(m, 10, "a", "b")
    publish(m, 20, "a", "c")
    reply, _ = m.apply(EntryMeta(30), Get("h", 10, auto_ack=False, since_ms=15))
    assert isinstance(reply, Deliveries) and [d.id for d in reply.deliveries] == [4]  # 3 waits behind 1


def test_a_durable_consumer_takes_one_message_of_a_group_until_it_settles() -> None:
    m = grouped()
    publish(m, 1, "a", "a", "b")
    apply(m, 2, DurableCheckout("d", 10))
    assert [d.id for _, d in m.durable_log("d", 0, 2)] == [1, 3]
    apply(m, 3, DurableSettle("d", 1))
    apply(m, 4, DurableCheckout("d", 10))
    assert [d.id for _, d in m.durable_log("d", 1, 3)] == [3, 2]


def test_the_head_of_a_blocked_group_expires_at_its_time() -> None:
    m = grouped(dead_letter_queue="dlq")
    publish(m, 0, "a")
    publish(m, 0, "a", expiration_ms=100)
    apply(m, 1, Checkout("c", prefetch=10))
    assert dead_lettered(apply(m, 100, Tick())) == []
    assert m.next_deadline_ms() == 101
    assert dead_lettered(apply(m, 101, Tick()), "expired") == [2]
    assert m.stats().messages_ready == 0 and m.stats().groups_blocked == 1


def test_purge_removes_grouped_messages_and_frees_a_group_blocked_by_a_delayed_one() -> None:
    m = grouped()
    publish(m, 1, "a", "a", "b", "b")
    apply(m, 2, Checkout("c", prefetch=10))
    apply(m, 3, Cancel("c", failed=False))
    apply(m, 3, Checkout("c", prefetch=10))
    apply(m, 4, Return((1,), "c", delay_ms=1000))
    effects = apply(m, 5, Purge())
    assert sorted(forgotten(effects)) == [1, 2, 4]
    stats = m.stats()
    assert (stats.messages, stats.groups, stats.groups_blocked) == (1, 1, 1)  # b's 3 is still out
    assert delivered(publish(m, 6, "a")) == [5]


@pytest.mark.parametrize("overflow", ["drop-head", "reject-publish"])
def test_length_limits_count_grouped_messages_and_drop_the_oldest_head(overflow: str) -> None:
    m = grouped(max_length=2, overflow=overflow, dead_letter_queue="dlq")
    publish(m, 1, "a", "b")
    effects = publish(m, 2, "a")
    if overflow == "drop-head":
        assert dead_lettered(effects, "maxlen") == [1]
        assert sorted(message.id for message in m.ready_messages()) == [2, 3]
    else:
        assert m.stats().messages_ready == 2 and not dead_lettered(effects)


def test_peek_shows_what_hand_outs_take_next_then_what_waits_behind_a_group_s_head() -> None:
    m = grouped()
    publish(m, 1, "a", None, "a", "b")
    assert [m.peek(p).id for p in (1, 2, 3, 4)] == [1, 2, 4, 3]  # type: ignore[union-attr]
    assert m.peek(5) is None
    assert [d.id for d in m.browse(1, 10, 10)] == [1, 2, 3, 4]
    apply(m, 2, Checkout("c", prefetch=3))
    assert [d.id for d in m.checked_out("c")] == [1, 2, 4]


def test_a_group_name_is_kept_once_and_let_go_with_the_group_s_last_message() -> None:
    m = grouped()
    publish(m, 1, "order-1", "order-1")
    message = next(iter(m.ready_messages()))
    assert message.group != 0 and m.stats().groups == 1
    apply(m, 2, Checkout("c", prefetch=10))
    apply(m, 3, Settle((1,), "c"))
    apply(m, 4, Settle((2,), "c"))
    assert m.stats().groups == 0
    apply(m, 4, Cancel("c"))
    publish(m, 5, "order-1")
    assert next(iter(m.ready_messages())).group != message.group  # a new number: nothing kept


def test_a_snapshot_mid_flight_restores_the_same_groups_turns_and_blocks() -> None:
    m = grouped(max_priority=3)
    publish(m, 1, "a", "a", "b", "c", None)
    publish(m, 1, "d", priority=2)
    apply(m, 2, Checkout("c", prefetch=2))
    assert delivered(apply(m, 3, Return((6,), "c", delay_ms=50))) == [3]  # d waits: b's turn
    chunks = list(m.snapshot_chunks())
    assert msgpack.unpackb(chunks[0])["version"] == 12
    restored = QueueMachine.restore(chunks)
    assert b"".join(restored.snapshot_chunks()) == b"".join(chunks)
    assert restored.stats() == m.stats()
    for machine in (m, restored):
        assert delivered(apply(machine, 60, Settle((1,), "c"))) == [6]  # d's head back, first by priority
    assert b"".join(restored.snapshot_chunks()) == b"".join(m.snapshot_chunks())


def test_a_queue_with_message_groups_and_a_single_active_consumer_keeps_group_order() -> None:
    m = grouped(single_active_consumer=True)
    publish(m, 1, "a", "a", "b")
    apply(m, 2, Checkout("c1", prefetch=10))
    apply(m, 2, Checkout("c2", prefetch=10))
    assert [d.id for d in m.checked_out("c1")] == [1, 3] and m.checked_out("c2") == []


def test_a_group_is_1_to_255_bytes_of_utf8() -> None:
    NewMessage(1, group="é" * (MAX_GROUP_BYTES // 2))
    for bad in ("", "x" * (MAX_GROUP_BYTES + 1), "é" * 128, "\ud800", 7):
        with pytest.raises(InvalidCommand, match="group"):
            NewMessage(1, group=bad)  # type: ignore[arg-type]


def test_x_message_groups_is_a_boolean_of_version_13_set_only_when_declared() -> None:
    assert parse_arguments({"x-message-groups": True}).message_groups is True
    assert arguments_version({"x-message-groups": True}) == 13
    with pytest.raises(InvalidCommand, match="not a runtime argument"):
        ApplyPolicy("p", {"x-message-groups": True}, 1)


def test_a_message_s_group_travels_sixth_and_only_in_version_13() -> None:
    publish_command = Enqueue((NewMessage(3, group="g"), NewMessage(4)))
    wire = encode_command(publish_command)
    assert wire == [1, {"messages": [[3, None, None, 0, None, "g"], [4, None]]}]
    assert decode_command(wire) == publish_command
    with pytest.raises(ValueError, match="version 12"):
        encode_command(publish_command, 12)


def test_a_log_of_version_13_replays_to_the_same_state() -> None:
    """What a follower or a restarted node does: each command, as a version-13 entry carries it, applied
    again from the start gives the leader's state, byte for byte."""
    log: list[tuple[int, Any]] = [
        (1, Checkout("c", prefetch=2)),
        (2, Enqueue(tuple(NewMessage(5, group=group) for group in ("a", "b", "a", None, "c", "a")))),
        (3, Return((1,), "c", delay_ms=10)),
        (4, Settle((2,), "c")),
        (20, Tick()),
        (21, Discard((1,), "c")),
        (22, Get("h", 3, auto_ack=True)),
    ]
    leader, follower = grouped(delivery_limit=2), grouped(delivery_limit=2)
    for now_ms, command in log:
        leader.apply(EntryMeta(now_ms), command)
        wire = msgpack.unpackb(msgpack.packb(encode_command(command, 13)))
        follower.apply(EntryMeta(now_ms), decode_command(wire))
    assert b"".join(follower.snapshot_chunks()) == b"".join(leader.snapshot_chunks())
    assert follower.stats() == leader.stats() and follower.stats().groups == 2


_REPLAY = """
import hashlib, random
from queue_state.arguments import parse_arguments
from queue_state.commands import (
    Checkout, ConsumerDown, Discard, Enqueue, EntryMeta, NewMessage, Return, Settle
)
from queue_state.machine import DELAYED_IN_A_GROUP, QueueMachine
draw = random.Random(7)
m = QueueMachine("q", parse_arguments({"x-message-groups": True, "x-max-priority": 3, "x-message-ttl": 500}))
names = [f"order-{i}" for i in range(30)] + [None]
seen = hashlib.sha256()
for now in range(1500):
    held = [(c.name, d.id) for c in m.consumers() for d in m.checked_out(c.name)]
    if held and draw.random() < 0.5:
        name, i = draw.choice(held)
        cmd = draw.choice(
            [Settle((i,), name), Return((i,), name), Return((i,), name, delay_ms=20), Discard((i,), name)]
        )
    elif draw.random() < 0.8:
        cmd = Enqueue(
            tuple(NewMessage(9, priority=draw.choice([0, 1, 3]), group=draw.choice(names)) for _ in range(3))
        )
    else:
        cmd = draw.choice([Checkout(draw.choice("ab"), draw.randint(1, 4)), ConsumerDown(draw.choice("ab"))])
    seen.update(repr(m.apply(EntryMeta(now * 7), cmd)).encode())
print(seen.hexdigest(), hashlib.sha256(b"".join(m.snapshot_chunks())).hexdigest())
"""


def test_replicas_agree_whatever_their_hash_seed() -> None:
    """Group names are text, whose hashes differ between processes (PYTHONHASHSEED): nothing the machine
    does may depend on the order they give, so nodes with different seeds stay identical."""
    root = Path(__file__).resolve().parents[2]
    runs = {
        subprocess.run(
            [sys.executable, "-c", _REPLAY],
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(runs) == 1


def test_rule_a_message_of_a_group_takes_no_delay() -> None:
    """Review finding: a published delay took a message out of its group's order (its successors went
    first) and, once due, scanned its whole group to find its place (quadratic with a long group). A
    grouped queue refuses it, as SQS FIFO has no per-message delay; a message without a group may wait."""
    m = grouped()
    reply, effects = m.apply(EntryMeta(1), Enqueue((NewMessage(10, delay_ms=100, group="a"),)))
    assert isinstance(reply, Failure) and reply.code == DELAYED_IN_A_GROUP, reply
    assert effects == [] and m.stats().messages == 0
    reply, _ = m.apply(EntryMeta(2), Enqueue((NewMessage(10, delay_ms=100), NewMessage(10, group="a"))))
    assert isinstance(reply, Enqueued), reply
