"""The dead-lettering package on its narrow protocols, with fakes instead of a node: the worker settles
only what was confirmed, publishing goes to the local door or through the injected `RemotePublisher`,
and the dispatcher runs one worker beside each source queue this node leads."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from support.eventually import eventually

from cluster.errors import NotLeader
from cluster.queues.dead_lettering.dispatcher import DeadLetterDispatcher
from cluster.queues.dead_lettering.publisher import ClusterPublisher
from cluster.queues.dead_lettering.worker import DeadLetterWorker
from cluster.queues.queue_results import Published
from cluster.replication.entry_codec import encode_queue_op
from cluster.replication.proposals import ProposalBatcher
from cluster.replication.stored_message import StoredMessage
from queue_state.commands import Enqueue, EntryMeta, NewMessage
from queue_state.effects import DeadLetter, Delivery

TOKENS = map(str, itertools.count()).__next__  # worker ids

Messages = Sequence[tuple[StoredMessage, int | None]]


class Source:
    """A source queue's dead-letter methods: `pending` letters, checked out all at once."""

    def __init__(self, pending: list[tuple[int, StoredMessage, int]], target: str | None = "dlq") -> None:
        self.name, self.group, self.is_leader = "src", "g1.src", True
        self.pending = pending
        self.target = target
        self.settled: list[tuple[int, ...]] = []

    def dead_letter_target(self) -> str | None:
        return self.target

    async def dlx_checkout(self, worker: str, prefetch: int) -> list[tuple[int, StoredMessage, int]]:
        taken, self.pending = self.pending[:prefetch], self.pending[prefetch:]
        return taken

    async def dlx_settle(self, ids: tuple[int, ...]) -> None:
        self.settled.append(ids)

    async def wait_applied(self, timeout: float) -> None:
        await asyncio.sleep(timeout)


class Publisher:
    """Confirms after `failures` refusals; records every attempt."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.attempts: list[tuple[str, list[bytes], str | None, int | None]] = []
        self.priorities: list[Sequence[int] | None] = []

    async def publish_confirmed(
        self,
        target: str,
        messages: Messages,
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        self.attempts.append((target, [m.body for m, _ in messages], publisher, seq))
        self.priorities.append(priorities)
        if self.failures:
            self.failures -= 1
            raise NotLeader("no quorum yet")


def letter(message_id: int, priority: int = 0) -> tuple[int, StoredMessage, int]:
    return message_id, StoredMessage(f"m{message_id}".encode(), {}, "utf8"), priority


async def run_until(worker: DeadLetterWorker, done: Any) -> None:
    task = asyncio.ensure_future(worker.run())
    try:
        await eventually(done, "the worker to finish", timeout=5)
    finally:
        task.cancel()


async def test_the_worker_settles_dead_letters_only_after_their_publish_is_confirmed() -> None:
    source, publisher = Source([letter(1), letter(2)]), Publisher(failures=2)
    worker = DeadLetterWorker(source, publisher, worker_id="dlx-1")
    await run_until(worker, lambda: source.settled)
    assert source.settled == [(1, 2)]
    assert len(publisher.attempts) == 3  # two refusals, then the confirm
    assert {(t, tuple(b), p, s) for t, b, p, s in publisher.attempts} == {
        ("dlq", (b"m1", b"m2"), worker.worker_id, 1)
    }  # every retry the same publisher and seq: the target deduplicates a retried batch


async def test_dead_letters_keep_their_priorities_and_a_batch_without_any_sends_none() -> None:
    source, publisher = Source([letter(1, 7), letter(2)]), Publisher()
    await run_until(
        DeadLetterWorker(source, publisher, prefetch=2, worker_id="dlx-1"), lambda: source.settled
    )
    plain_source, plain = Source([letter(3)]), Publisher()
    await run_until(DeadLetterWorker(plain_source, plain, worker_id="dlx-2"), lambda: plain_source.settled)
    assert (publisher.priorities, plain.priorities) == ([[7, 0]], [None])  # None: any version reads it


async def test_the_worker_drops_a_batch_when_the_source_stops_dead_lettering_at_least_once() -> None:
    source, publisher = Source([letter(1)], target=None), Publisher()
    worker = DeadLetterWorker(source, publisher, worker_id="dlx-1")
    await run_until(worker, lambda: not source.pending)
    await asyncio.sleep(0.05)
    assert publisher.attempts == [] and source.settled == []


class Door:
    def __init__(self) -> None:
        self.published: list[tuple[list[bytes], str | None, int | None]] = []

    async def publish(
        self,
        messages: Messages,
        publisher: str | None,
        seq: int | None,
        *,
        priorities: Sequence[int] | None = None,
    ) -> Published:
        self.published.append(([m.body for m, _ in messages], publisher, seq))
        return Published([1], duplicate=False)


class Remote:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[bytes], str | None, int | None]] = []

    async def publish(
        self,
        queue: str,
        messages: Messages,
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        self.calls.append((queue, [m.body for m, _ in messages], publisher, seq))


MESSAGES = [(StoredMessage(b"x", {}, "utf8"), None)]


async def test_a_target_this_node_leads_is_published_to_through_its_door() -> None:
    door, remote = Door(), Remote()
    publisher = ClusterPublisher(lambda q: door if q == "here" else None, remote)
    await publisher.publish_confirmed("here", MESSAGES, "w", 3)
    assert door.published == [([b"x"], "w", 3)] and remote.calls == []


async def test_a_target_led_elsewhere_is_published_to_through_the_remote_publisher() -> None:
    remote = Remote()
    publisher = ClusterPublisher(lambda q: None, remote)
    await publisher.publish_confirmed("there", MESSAGES, "w", 4)
    assert remote.calls == [("there", [b"x"], "w", 4)]


async def test_without_a_remote_publisher_a_target_led_elsewhere_is_not_leader() -> None:
    publisher = ClusterPublisher(lambda q: None)
    with pytest.raises(NotLeader):
        await publisher.publish_confirmed("there", MESSAGES, "w", 4)


def effect(target: str | None) -> tuple[DeadLetter, list[tuple[Delivery, StoredMessage]]]:
    delivery = Delivery(7, 0, False, 0)
    return DeadLetter("rejected", target, (delivery,)), [(delivery, StoredMessage(b"d", {}, "utf8"))]


async def test_at_most_once_dead_letters_go_to_a_declared_target_with_their_death_and_no_publisher() -> None:
    remote = Remote()
    dispatcher = DeadLetterDispatcher(
        ClusterPublisher(lambda q: None, remote), {"dlq"}.__contains__, new_token=TOKENS
    )
    dispatcher.dead_lettered("src", *effect("dlq"), now_ms=5)
    dispatcher.dead_lettered("src", *effect("missing"), now_ms=5)
    await asyncio.sleep(0.05)
    assert [(queue, bodies, publisher) for queue, bodies, publisher, _ in remote.calls] == [
        ("dlq", [b"d"], None)
    ]


async def test_the_dispatcher_runs_one_worker_beside_each_source_queue_this_node_leads() -> None:
    publisher = ClusterPublisher(lambda q: None)
    dispatcher = DeadLetterDispatcher(
        publisher, lambda q: True, prefetch=5, new_token=TOKENS
    )  # the node's setting
    source = Source([])
    dispatcher.leadership_changed(source, True)
    assert dispatcher.workers[source.group][0].prefetch == 5
    first = dispatcher.workers[source.group][1]
    dispatcher.leadership_changed(source, True)  # again (a new term): the worker starts over
    assert first.cancelling() and dispatcher.workers[source.group][1] is not first
    dispatcher.leadership_changed(source, False)
    assert dispatcher.workers == {}
    await asyncio.sleep(0)


def proposed(messages: Messages, publisher: str | None, seq: int | None) -> None:
    """What a queue's leader does with a publish before it replicates it: its operation, encoded as the
    door encodes it, passes the leader's batcher (TooLarge beyond what a frame between nodes carries)."""
    sizes = tuple(NewMessage(len(m.body), expiration) for m, expiration in messages)
    op = encode_queue_op(EntryMeta(0), Enqueue(sizes, publisher, seq), [m for m, _ in messages])
    ProposalBatcher().submit(op).cancel()


class ReplicatingPublisher(Publisher):
    """Confirms what a queue's leader would propose."""

    async def publish_confirmed(
        self,
        target: str,
        messages: Messages,
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        self.attempts.append((target, [m.body for m, _ in messages], publisher, seq))
        proposed(messages, publisher, seq)


LARGE = 20 << 20  # five letters this large are too many for one publish


async def test_rule_dead_letters_too_large_for_one_publish_together_are_published_in_parts_that_fit() -> None:
    """A batch of large dead letters in one publish would be refused for good (its operation cannot fit
    a frame between nodes), and the source would keep them for ever: each part published fits."""
    letters = [(n, StoredMessage(bytes([n]) * LARGE, {}, "base64"), 0) for n in range(1, 6)]
    source, publisher = Source(list(letters)), ReplicatingPublisher()
    worker = DeadLetterWorker(source, publisher, worker_id="dlx-1")
    await run_until(worker, lambda: sorted(i for ids in source.settled for i in ids) == [1, 2, 3, 4, 5])
    assert worker.retries == 0  # no part was refused
    assert sorted(body for _, bodies, _, _ in publisher.attempts for body in bodies) == [
        message.body for _, message, _ in letters
    ]


class ReplicatingDoor(Door):
    """A door that publishes what its leader would propose."""

    async def publish(
        self,
        messages: Messages,
        publisher: str | None,
        seq: int | None,
        *,
        priorities: Sequence[int] | None = None,
    ) -> Published:
        proposed(messages, publisher, seq)
        return await super().publish(messages, publisher, seq, priorities=priorities)


async def test_rule_at_most_once_dead_letters_too_large_for_one_publish_together_go_in_parts_that_fit() -> (
    None
):
    """Dead letters that leave together (an expiry, a purge of a dead-lettering queue) are published in
    parts: in one publish they would be refused, and at most once means never sent again."""
    door = ReplicatingDoor()
    dispatcher = DeadLetterDispatcher(ClusterPublisher(lambda q: door), lambda q: True, new_token=TOKENS)
    deliveries = tuple(Delivery(n, 0, False, 0) for n in range(1, 6))
    held = [(d, StoredMessage(bytes([d.id]) * LARGE, {}, "base64")) for d in deliveries]
    dispatcher.dead_lettered("src", DeadLetter("expired", "dlq", deliveries), held, now_ms=5)
    await eventually(
        lambda: sum(len(bodies) for bodies, _, _ in door.published) == 5, "5 published", timeout=5
    )
    assert sorted(body for bodies, _, _ in door.published for body in bodies) == [m.body for _, m in held]
