"""`QueueDoor`, the one door into a queue, on a real in-process node: typed results, and refusals
raised as `cluster.errors` named for what they mean."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator
from pathlib import Path

import msgpack
import pytest
import pytest_asyncio
from in_process_node import InProcessNode, in_process_node
from support.eventually import eventually

from api.access import Principal
from api.consumer_owners import own_consumer
from cluster.errors import BadRequest, LogGap, QueueConflict, QueueFull, Refused, UnknownConsumer
from cluster.queues.policies import applied_policy
from cluster.queues.queue_results import MessageRow, Outcome, Position, Published, Settled
from cluster.replication.entry_codec import QUEUE_OP_VERSION, QueueOp, decode_queue_op, entry_ops, op_bodies
from cluster.replication.stored_message import StoredMessage
from metadata_state.records import PolicyRecord, PolicySet
from queue_state.commands import Cancel, Checkout, ConsumerDown, Return
from queue_state.policy import AppliedPolicy

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessNode]:
    async with in_process_node(Path(tmp_path_factory.mktemp("door"))) as node:
        yield node


def texts(*bodies: str) -> list[tuple[StoredMessage, int | None]]:
    return [(StoredMessage(body.encode(), {"k": body}, "utf8"), None) for body in bodies]


async def test_publish_answers_the_ids_and_a_full_reject_publish_queue_raises_queue_full(
    running: InProcessNode,
) -> None:
    door = await running.declare("d-publish", {"x-max-length": 2, "x-overflow": "reject-publish"})
    assert await door.publish(texts("a", "b"), "p", 1) == Published([1, 2], duplicate=False)
    assert await door.publish(texts("a", "b"), "p", 1) == Published([1, 2], duplicate=True)
    with pytest.raises(QueueFull) as full:
        await door.publish(texts("c"), None, None)
    assert full.value.code == "reject-publish" and "d-publish" in full.value.reason
    with pytest.raises(BadRequest):  # a field the state machine does not take
        await door.publish(texts("c"), "", 2)
    assert door.stats().messages == 2


async def test_get_answers_message_rows_with_bodies_headers_and_publish_time(running: InProcessNode) -> None:
    door = await running.declare("d-get")
    before = int(time.time() * 1000) - 1000
    await door.publish(texts("x"), None, None)
    [row] = await door.get(5, auto_ack=False, since_ms=None)
    assert isinstance(row, MessageRow)
    assert (row.id, row.body, row.encoding, row.headers, row.delivery_count) == (
        1,
        b"x",
        "utf8",
        {"k": "x"},
        0,
    )
    assert row.published_at_ms >= before and row.seq is None
    assert await door.settle((1,), None, Outcome.REQUEUE) == Settled()
    [again] = await door.get(1, auto_ack=True, since_ms=None)
    assert (again.id, again.delivery_count, again.redelivered) == (1, 1, True)
    settled = await door.settle((1,), None, Outcome.ACK)
    assert settled.warning is not None and "1" in settled.warning


async def test_poll_waits_for_a_delivery_and_an_unknown_consumer_raises(running: InProcessNode) -> None:
    door = await running.declare("d-poll")
    tag = await door.register_consumer(prefetch=5, priority=0, timeout_ms=None, since_ms=None)
    started = time.monotonic()
    assert await door.poll(tag, 10, 0.3) == []
    assert time.monotonic() - started >= 0.3  # an empty queue's poll waited its whole wait
    poll = asyncio.ensure_future(door.poll(tag, 10, 30.0))
    await door.publish(texts("late"), None, None)
    assert [row.body for row in await asyncio.wait_for(poll, 30)] == [b"late"]
    await door.settle((1,), tag, Outcome.ACK)
    await door.cancel(tag)
    with pytest.raises(UnknownConsumer) as unknown:
        await door.poll(tag, 1, 0)
    assert unknown.value.code == "not_found"
    with pytest.raises(UnknownConsumer):
        await door.settle((1,), tag, Outcome.ACK)


async def test_a_reader_from_a_time_gets_only_messages_enqueued_since_then(running: InProcessNode) -> None:
    door = await running.declare("d-since")
    await door.publish(texts("old"), None, None)
    await asyncio.sleep(0.05)
    since = int(time.time() * 1000)
    await asyncio.sleep(0.05)
    await door.publish(texts("new"), None, None)
    tag = await door.register_consumer(prefetch=10, priority=0, timeout_ms=None, since_ms=since)
    assert [row.body for row in await door.poll(tag, 10, 1.0)] == [b"new"]
    assert await door.poll(tag, 10, 0.1) == []


async def test_rule_a_since_consumer_is_registered_through_the_log_once_every_node_reads_version_2(
    running: InProcessNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    door = await running.declare("d-reader")
    await door.publish(texts("a", "b", "c"), None, None)
    with monkeypatch.context() as older_member:  # a node still reads version 1 only
        older_member.setattr(running.node.formats.queue_operations, "version_for", lambda others: 1)
        local = await door.register_consumer(prefetch=1, priority=0, timeout_ms=None, since_ms=0)
    reader = await door.register_consumer(prefetch=1, priority=0, timeout_ms=700, since_ms=0)
    checkouts = [op for op in logged_ops(running, door.group) if isinstance(op.command, Checkout)]
    assert [op.command for op in checkouts] == [Checkout(reader, 1, 0, 700, since_ms=0)]
    assert [row.body for row in await door.poll(reader, 10, 1.0)] == [b"a"]  # its prefetch
    assert [row.body for row in await door.poll(local, 10, 1.0)] == [b"b"]  # the leader's own session
    assert door.stats().consumers == 1
    assert await door.settle((1,), reader, Outcome.ACK) == Settled()
    assert [row.body for row in await door.poll(reader, 10, 1.0)] == [b"c"]
    await door.cancel(reader)
    assert door.stats().consumers == 0 and door.stats().messages_ready == 1


async def test_peek_reads_a_ready_position_and_refuses_a_position_below_1(running: InProcessNode) -> None:
    door = await running.declare("d-peek")
    await door.publish(texts("a", "b"), None, None)
    row = await door.peek(2)
    assert row is not None and (row.id, row.body, row.headers) == (2, b"b", {"k": "b"})
    assert await door.peek(3) is None
    with pytest.raises(BadRequest):
        await door.peek(0)
    assert door.stats().messages_ready == 2


async def test_durable_positions_log_rows_with_seqs_and_gaps(running: InProcessNode) -> None:
    door = await running.declare("d-durable")
    await door.publish(texts("a", "bb", "ccc"), None, None)
    assert await door.register_durable("s") == Position("s", 0, 0, 0)
    assert await door.durable_checkout("s", 2) == Position("s", 0, 2, 3)
    rows = await door.read_durable_log("s", 0, 2)
    assert [(row.seq, row.body) for row in rows] == [(0, b"a"), (1, b"bb")]
    assert await door.durable_settle("s", 1) == Position("s", 1, 2, 0)
    with pytest.raises(LogGap):
        await door.read_durable_log("s", 0, 2)
    with pytest.raises(Refused) as beyond:
        await door.durable_settle("s", 9)
    assert beyond.value.code == "beyond_sequence"
    with pytest.raises(UnknownConsumer) as unknown:
        await door.read_durable_log("nobody", 0, 1)
    assert unknown.value.code == "not_found"
    tag = await door.register_consumer(prefetch=1, priority=0, timeout_ms=None, since_ms=None)
    with pytest.raises(Refused) as taken:
        await door.durable_checkout(tag, 1)
    assert taken.value.code == "name_in_use"


async def test_update_arguments_owns_the_runtime_rule_and_answers_the_new_definition(
    running: InProcessNode,
) -> None:
    door = await running.declare("d-update")
    assert (await door.update_arguments({"x-message-ttl": 1000}))["x-message-ttl"] == 1000
    assert door.definition()["x-message-ttl"] == 1000
    with pytest.raises(BadRequest, match="cannot be changed at runtime"):
        await door.update_arguments({"x-queue-type": "quorum"})
    with pytest.raises(BadRequest, match="x-overflow"):
        await door.update_arguments({"x-overflow": "explode"})
    assert "x-message-ttl" not in await door.update_arguments({"x-message-ttl": None})


async def test_purge_counts_and_a_guarded_delete_of_a_queue_in_use_is_a_conflict(
    running: InProcessNode,
) -> None:
    door = await running.declare("d-purge")
    await door.publish(texts("a", "b"), None, None)
    assert await door.purge() == 2
    tag = await door.register_consumer(prefetch=1, priority=0, timeout_ms=None, since_ms=None)
    with pytest.raises(QueueConflict):
        await door.delete_if(if_empty=True, if_unused=True)
    await door.cancel(tag)
    await door.delete_if(if_empty=True, if_unused=True)
    assert "d-purge" not in running.node.metadata.queues


def logged_ops(running: InProcessNode, group: str) -> list[QueueOp]:
    """Every queue operation in a queue group's log, oldest first."""
    assert running.node.store is not None
    group_log = running.node.store.group(group)
    entries = group_log.entries(group_log.first_index(), group_log.last_index() + 1)
    return [decode_queue_op(op) for entry in entries if entry.data for op in entry_ops(entry.data)]


def published_op_versions(running: InProcessNode, group: str) -> list[int]:
    """The envelope version of every publish in a queue group's log, oldest first."""
    assert running.node.store is not None
    group_log = running.node.store.group(group)
    entries = group_log.entries(group_log.first_index(), group_log.last_index() + 1)
    ops = [op for entry in entries if entry.data for op in msgpack.unpackb(entry.data, raw=False)]
    return [op[0] if len(op) == 4 else 0 for op in ops if op_bodies(op) is not None]


async def test_operations_are_written_in_the_version_every_member_of_the_group_reads(
    running: InProcessNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    door = await running.declare("d-versions")
    await door.publish(texts("alone"), None, None)  # a group of one: no older member to wait for
    with monkeypatch.context() as older_member:
        older_member.setattr(running.node.formats.queue_operations, "version_for", lambda others: 0)
        await door.publish(texts("older"), None, None)
    await door.publish(texts("again"), None, None)
    assert published_op_versions(running, door.group) == [QUEUE_OP_VERSION, 0, QUEUE_OP_VERSION]
    rows = await door.get(5, auto_ack=True, since_ms=None)
    assert [(row.body, row.headers) for row in rows] == [
        (b"alone", {"k": "alone"}),
        (b"older", {"k": "older"}),
        (b"again", {"k": "again"}),
    ]


async def test_rule_plain_returns_and_reasons_are_written_only_once_every_node_reads_version_3(
    running: InProcessNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    door = await running.declare("d-counting")
    await door.publish(texts("a", "b"), None, None)
    first = await door.register_consumer(prefetch=2, priority=0, timeout_ms=None, since_ms=None)
    held = [row.id for row in await door.poll(first, 10, 1.0)]
    with monkeypatch.context() as older_member:  # a node still reads version 2 only
        older_member.setattr(running.node.formats.queue_operations, "version_for", lambda others: 2)
        for refused in (
            door.settle((held[0],), first, Outcome.REQUEUE, failed=False),
            door.settle((held[0],), first, Outcome.DISCARD, reason="why"),
        ):
            with pytest.raises(Refused) as caught:
                await refused
            assert caught.value.code == "upgrade_in_progress"
        await door.settle((held[0],), first, Outcome.DISCARD, failed=False)  # failed means nothing here
        await door.cancel(first)  # written without the field: a failure, as a version-2 node applies it
    second = await door.register_consumer(prefetch=1, priority=0, timeout_ms=None, since_ms=None)
    (row,) = await door.poll(second, 10, 1.0)
    assert (row.delivery_count, row.acquired_count) == (1, 1)
    await door.settle((row.id,), second, Outcome.REQUEUE, failed=False)
    (row,) = await door.poll(second, 10, 1.0)
    assert (row.delivery_count, row.acquired_count) == (1, 2)
    await door.cancel(second)  # version 3: a plain return
    counted = [
        op.command for op in logged_ops(running, door.group) if isinstance(op.command, Cancel | Return)
    ]
    assert [getattr(command, "failed", None) for command in counted] == [True, False, False]


async def test_rule_policies_are_set_and_applied_only_once_every_node_reads_them(
    running: InProcessNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node that reads metadata codec 1 would refuse a policy command: none is written (409); one that
    reads queue operations 6 would refuse an `ApplyPolicy`: the policy waits in the metadata until it
    can be applied, then applies within the leader's once-a-second comparison."""
    door = await running.declare("d-policy", {"x-max-length": 10})
    policy = {"pattern": "^d-policy$", "definition": {"max-length": 2}}
    with monkeypatch.context() as older_member:
        older_member.setattr(running.node.formats.metadata, "version_for", lambda others: 1)
        status, body = await running.call("PUT", "/api/policies/small", json=policy)
        assert (status, body["error"]) == (409, "upgrade_in_progress")
    assert "small" not in running.node.metadata.policies
    with monkeypatch.context() as older_member:
        older_member.setattr(running.node.formats.queue_operations, "version_for", lambda others: 6)
        status, _ = await running.call("PUT", "/api/policies/small", json=policy)
        assert status == 201
        await eventually(lambda: "small" in running.node.metadata.policies, "the policy recorded")
        revision = running.node.metadata.policies_revision
        assert not door.apply_policy(revision, lambda: AppliedPolicy("small", {"x-max-length": 2}, revision))
        assert door.policy == "" and door.effective_definition()["x-max-length"] == 10
    await eventually(lambda: door.policy == "small", "the policy applied once every node reads it")
    assert door.effective_definition()["x-max-length"] == 2 and door.definition()["x-max-length"] == 10
    status, _ = await running.call("DELETE", "/api/policies/small")
    assert status == 204
    await eventually(lambda: door.policy == "", "the declared arguments back")
    assert door.effective_definition() == door.definition()


async def test_rule_each_revision_of_the_policies_is_proposed_once_and_a_later_one_wins(
    running: InProcessNode,
) -> None:
    """Two revisions proposed back to back: the first's reply does not let the second be proposed again,
    and the queue ends on the later one whichever commits first."""
    door = await running.declare("d-revisions", {"x-max-length": 10})
    chosen: list[int] = []

    def choose(revision: int, limit: int) -> AppliedPolicy:
        chosen.append(revision)
        return AppliedPolicy(f"p{revision}", {"x-max-length": limit}, revision)

    assert door.apply_policy(101, lambda: choose(101, 4))
    assert not door.apply_policy(101, lambda: choose(101, 4))  # in flight
    assert door.apply_policy(102, lambda: choose(102, 3))
    await eventually(lambda: door.policy == "p102", "the later revision applied")
    assert not door.apply_policy(102, lambda: choose(102, 3))  # applied
    assert not door.apply_policy(101, lambda: choose(101, 4))  # older
    assert chosen == [101, 102] and door.effective_definition()["x-max-length"] == 3


async def test_rule_an_auto_ack_poll_answers_only_what_its_settle_settled(running: InProcessNode) -> None:
    """Between the hand-out to an auto-ack consumer and the Settle its poll writes, some of what it holds
    may have gone back to the queue (its consumer ended, a message returned): the poll answers none of
    those, only what the Settle took, so nothing is both answered and still in the queue."""
    door = await running.declare("d-auto-ack")
    tag = await door.register_consumer(prefetch=2, priority=0, timeout_ms=None, since_ms=None, auto_ack=True)
    await door.publish(texts("a", "b"), None, None)
    await eventually(lambda: door.stats().messages_unacknowledged == 2, "both held by the consumer")
    await door._submit(door._command(Return, (1,), tag, False, 60_000))  # 1 waits a minute in the queue
    assert [row.body for row in await door.poll(tag, 10, 1.0)] == [b"b"]
    assert (door.stats().messages_delayed, door.stats().messages_unacknowledged) == (1, 0)
    await door.publish(texts("c"), None, None)
    await eventually(lambda: door.stats().messages_unacknowledged == 1, "c held by the consumer")
    await door._submit(door._command(ConsumerDown, tag))  # the consumer ended: what it held returned
    with pytest.raises(UnknownConsumer):
        await door.poll(tag, 10, 1.0)
    assert (door.stats().messages_ready, door.stats().messages) == (1, 2)  # nothing answered, nothing lost


async def test_rule_a_poll_answers_only_what_the_consumer_holds_now(running: InProcessNode) -> None:
    """A delivery waiting for a consumer's poll can leave it first (here its lease ends and a consumer of
    a higher priority takes the message): its poll must not hand it out, or two consumers hold one
    message."""
    door = await running.declare("d-one-holder", {"x-lease-period": 300})
    first = await door.register_consumer(prefetch=1, priority=0, timeout_ms=None, since_ms=None)
    await door.publish(texts("m"), None, None)

    def held_by() -> list[int]:
        return [consumer.unacknowledged for consumer in door.consumer_list()]

    await eventually(lambda: held_by() == [1], "m handed to the first consumer")
    second = await door.register_consumer(prefetch=1, priority=5, timeout_ms=None, since_ms=None)
    await eventually(lambda: held_by() == [0, 1], "m taken by the second once its lease ended")
    assert await door.poll(first, 10, 0) == []
    assert [row.body for row in await door.poll(second, 10, 1.0)] == [b"m"]
    await door.cancel(first)
    await door.cancel(second)


async def test_rule_a_message_put_before_an_auto_ack_gets_count_makes_the_answer_larger_never_lost(
    running: InProcessNode,
) -> None:
    """The get counts its budget on the applied state; a higher-priority publish proposed before the get
    (its entry first in the log, not yet applied when the get counts) is served first by the get."""
    door = await running.declare("d-overtaken")
    await door.publish(texts("s1", "s2", "s3", "s4"), None, None)  # 2 bytes each: a budget of 4 fits 2
    big = [(StoredMessage(b"B" * 100, {}, "utf8"), None)]
    publish = asyncio.ensure_future(door.publish(big, None, None, priorities=[5]))
    get = asyncio.ensure_future(door.get(10, auto_ack=True, since_ms=None, max_bytes=4))
    published, rows = await asyncio.gather(publish, get)
    assert [row.body for row in rows] == [b"B" * 100, b"s1"], rows  # counted 2, served the newcomer first
    assert sum(len(row.body) for row in rows) > 4  # larger than the budget, as the rule allows
    assert published.ids[0] in {row.id for row in rows}
    rest = await door.get(10, auto_ack=True, since_ms=None)
    assert [row.body for row in rest] == [b"s2", b"s3", b"s4"]  # none lost


async def test_rule_a_consumer_name_of_no_owner_stays_usable_while_the_queue_has_it(
    running: InProcessNode,
) -> None:
    """Consumers registered by a version before owners (`api.consumer_owners`) keep their names, readers,
    plain consumers and durable ones alike; a name the queue does not have is the caller's own."""
    door = await running.declare("d-owners")
    caller = Principal("alice", administrator=False, permissions={"/": ("", "", ".*")})
    tag = await door.register_consumer(1, 0, None, None)  # no owner: as an earlier version registered it
    await door.register_durable("spark-old")
    assert door.has_consumer(tag) and door.has_consumer("spark-old") and not door.has_consumer("spark-new")
    assert own_consumer(door, caller, tag) == tag
    assert own_consumer(door, caller, "spark-old") == "spark-old"
    assert own_consumer(door, caller, "spark-new") == "spark-new~alice"


async def test_rule_a_policy_naming_keys_a_node_does_not_read_is_refused_409(
    running: InProcessNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node that reads queue operations 9 would not apply `max-unacked`: no such policy is set."""
    policy = {"pattern": "^d-policy-keys$", "definition": {"max-unacked": 2}}
    with monkeypatch.context() as older_member:
        older_member.setattr(running.node.formats.queue_operations, "version_for", lambda others: 9)
        status, body = await running.call("PUT", "/api/policies/unacked", json=policy)
        assert (status, body["error"]) == (409, "upgrade_in_progress")
    assert "unacked" not in running.node.metadata.policies


async def test_rule_a_policy_the_cluster_cannot_write_is_applied_once_every_node_reads_it(
    running: InProcessNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a node reads queue operations 9, a policy with `x-max-unacked` is not proposed and its
    revision not recorded: the same revision applies once every node reads it."""
    door = await running.declare("d-policy-later")
    unacked = AppliedPolicy("unacked", {"x-max-unacked": 2}, 301)
    with monkeypatch.context() as older_member:
        older_member.setattr(running.node.formats.queue_operations, "version_for", lambda others: 9)
        assert not door.apply_policy(301, lambda: unacked)
    assert door.policy == ""
    assert door.apply_policy(301, lambda: unacked)
    await eventually(lambda: door.policy == "unacked", "the policy applied")


async def test_rule_a_leader_that_cannot_parse_a_policy_keeps_the_queue_s_policy(
    running: InProcessNode,
) -> None:
    """A policy with a key this build does not know (set through a node of a later version) is not
    proposed as no policy over the one the queue applies."""
    door = await running.declare("d-policy-unknown", {"x-max-length": 10})
    assert door.apply_policy(401, lambda: AppliedPolicy("small", {"x-max-length": 2}, 401))
    await eventually(lambda: door.policy == "small", "the policy applied")
    later = PolicySet((PolicyRecord("later", "^d-policy-unknown$", {"from-a-later-version": 1}),))
    assert not door.apply_policy(402, functools.partial(applied_policy, later, "d-policy-unknown"))
    assert not door.apply_policy(402, functools.partial(applied_policy, later, "d-policy-unknown"))
    await asyncio.sleep(0.2)
    assert door.policy == "small" and door.effective_definition()["x-max-length"] == 2
