"""The dead-lettering package on its narrow protocols, with fakes instead of a node and a real routing
table: the worker settles a letter only once every queue its route reaches confirmed it, keeps those
that reach none, publishing goes to the local door or through the injected `RemotePublisher`, and the
dispatcher runs one worker beside each source queue this node leads."""

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
from cluster.queues.dead_lettering.routes import DeadLetterRouter
from cluster.queues.dead_lettering.worker import DeadLetterWorker
from cluster.queues.queue_results import Published
from cluster.replication.entry_codec import encode_queue_op
from cluster.replication.proposals import ProposalBatcher
from cluster.replication.stored_message import StoredMessage
from cluster.routing.routing_table import RoutingTable
from metadata_state.records import QUEUE_DESTINATION, BindingRecord, ExchangeRecord
from metadata_state.vhost_names import DEFAULT_VHOST
from queue_state.arguments import DeadLetterRoute
from queue_state.commands import Enqueue, EntryMeta, NewMessage
from queue_state.effects import DeadLetter, Delivery

TOKENS = map(str, itertools.count()).__next__  # worker ids

Messages = Sequence[tuple[StoredMessage, int | None]]


TO_DLQ = DeadLetterRoute("", "dlq")  # x-dead-letter-queue dlq


class Routes:
    """The routing table of a node, as bindings are added: a topic exchange `dlx`; queues that exist."""

    def __init__(self, *queues: str) -> None:
        self.queues = {"dlq", *queues}
        self.bindings: list[BindingRecord] = []

    def bind(self, queue: str, key: str) -> None:
        self.bindings.append(BindingRecord(DEFAULT_VHOST, "dlx", queue, QUEUE_DESTINATION, key))

    def router(self) -> DeadLetterRouter:
        exchanges = [ExchangeRecord(DEFAULT_VHOST, "dlx", "topic")]
        return DeadLetterRouter(lambda: RoutingTable(exchanges, self.bindings), self.queues.__contains__)


class Source:
    """A source queue's dead-letter methods: `pending` letters, checked out all at once."""

    def __init__(
        self, pending: list[tuple[int, StoredMessage, int]], route: DeadLetterRoute | None = TO_DLQ
    ) -> None:
        self.name, self.group, self.is_leader = "src", "g1.src", True
        self.pending = pending
        self.route = route
        self.settled: list[tuple[int, ...]] = []

    def dead_letter_route(self) -> DeadLetterRoute | None:
        return self.route

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


def letter(
    message_id: int, priority: int = 0, routing_key: str | None = None
) -> tuple[int, StoredMessage, int]:
    """A letter; with `routing_key`, one published through exchange `events` by that key."""
    headers = {} if routing_key is None else {"x-amqp-exchange": "events", "x-amqp-routing-key": routing_key}
    return message_id, StoredMessage(f"m{message_id}".encode(), headers, "utf8"), priority


ROUTER = Routes().router()  # to queue dlq by its name


async def run_until(worker: DeadLetterWorker, done: Any) -> None:
    task = asyncio.ensure_future(worker.run())
    try:
        await eventually(done, "the worker to finish", timeout=5)
    finally:
        task.cancel()


async def test_the_worker_settles_dead_letters_only_after_their_publish_is_confirmed() -> None:
    source, publisher = Source([letter(1), letter(2)]), Publisher(failures=2)
    worker = DeadLetterWorker(source, publisher, ROUTER, worker_id="dlx-1")
    await run_until(worker, lambda: source.settled)
    assert source.settled == [(1, 2)]
    assert len(publisher.attempts) == 3  # two refusals, then the confirm
    assert {(t, tuple(b), p, s) for t, b, p, s in publisher.attempts} == {
        ("dlq", (b"m1", b"m2"), worker.worker_id, 1)
    }  # every retry the same publisher and seq: the target deduplicates a retried batch


async def test_dead_letters_keep_their_priorities_and_a_batch_without_any_sends_none() -> None:
    source, publisher = Source([letter(1, 7), letter(2)]), Publisher()
    await run_until(
        DeadLetterWorker(source, publisher, ROUTER, prefetch=2, worker_id="dlx-1"), lambda: source.settled
    )
    plain_source, plain = Source([letter(3)]), Publisher()
    await run_until(
        DeadLetterWorker(plain_source, plain, ROUTER, worker_id="dlx-2"), lambda: plain_source.settled
    )
    assert (publisher.priorities, plain.priorities) == ([[7, 0]], [None])  # None: any version reads it


async def test_the_worker_drops_a_batch_when_the_source_stops_dead_lettering_at_least_once() -> None:
    source, publisher = Source([letter(1)], route=None), Publisher()
    worker = DeadLetterWorker(source, publisher, ROUTER, worker_id="dlx-1")
    await run_until(worker, lambda: not source.pending)
    await asyncio.sleep(0.05)
    assert publisher.attempts == [] and source.settled == []


class Queues(Publisher):
    """Confirms every queue but those `down`, which refuse while they are; records each publish's
    target, letters' headers and seq."""

    def __init__(self, *down: str) -> None:
        super().__init__()
        self.down = set(down)
        self.sent: list[tuple[str, list[dict[str, Any]], int | None]] = []

    async def publish_confirmed(
        self,
        target: str,
        messages: Messages,
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        self.sent.append((target, [m.headers for m, _ in messages], seq))
        if target in self.down:
            raise NotLeader("no quorum yet")

    async def publish(
        self,
        queue: str,
        messages: Messages,
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        """The same, as the `RemotePublisher` of queues led elsewhere."""
        await self.publish_confirmed(queue, messages, publisher, seq, priorities)


def routed_by(key: str) -> dict[str, Any]:
    """The headers of a letter routed through `dlx` by `key`."""
    return {"x-amqp-exchange": "dlx", "x-amqp-routing-key": key}


async def test_rule_a_dead_letter_is_settled_only_once_every_queue_its_exchange_routes_it_to_confirmed() -> (
    None
):
    routes = Routes("eu", "all")
    routes.bind("eu", "order.*.eu")
    routes.bind("all", "#")
    source = Source([letter(1, routing_key="order.1.eu"), letter(2, routing_key="order.2.us")])
    source.route = DeadLetterRoute("dlx", None)  # by each letter's own routing key
    queues = Queues("eu")
    task = asyncio.ensure_future(DeadLetterWorker(source, queues, routes.router(), worker_id="w").run())
    try:
        await eventually(lambda: len([q for q, _, _ in queues.sent if q == "eu"]) >= 3, "eu refused thrice")
        assert source.settled == [(2,)]  # letter 1 waits for eu; letter 2 reached only all
        queues.down.clear()
        await eventually(lambda: source.settled == [(2,), (1,)], "letter 1 settled", timeout=10)
    finally:
        task.cancel()
    assert [(q, headers) for q, headers, _ in queues.sent if q == "all"] == [
        ("all", [routed_by("order.1.eu"), routed_by("order.2.us")])  # once: all confirmed it
    ]
    assert {(q, tuple(map(str, h)), seq) for q, h, seq in queues.sent if q == "eu"} == {
        ("eu", (str(routed_by("order.1.eu")),), 2)  # every retry the same seq: eu deduplicates it
    }


async def test_rule_dead_letters_that_reach_no_queue_wait_in_the_source_until_a_binding_appears() -> None:
    """RabbitMQ's at-least-once dead-lettering keeps retrying what its exchange cannot route, as a
    missing target queue is retried: nothing is lost for want of a binding."""
    routes = Routes("late")
    source = Source([letter(1, routing_key="order.1.eu")], DeadLetterRoute("dlx", "dead"))
    queues = Queues()
    task = asyncio.ensure_future(DeadLetterWorker(source, queues, routes.router(), worker_id="w").run())
    try:
        await asyncio.sleep(0.3)
        assert (queues.sent, source.settled) == ([], [])
        routes.bind("late", "dead")  # the route's key, not the letter's own
        await eventually(lambda: source.settled == [(1,)], "settled once bound", timeout=10)
    finally:
        task.cancel()
    assert [(q, headers) for q, headers, _ in queues.sent] == [("late", [routed_by("dead")])]


async def test_at_most_once_dead_letters_go_to_every_queue_their_exchange_routes_them_to_or_nowhere() -> None:
    routes = Routes("eu", "all")
    routes.bind("eu", "order.*.eu")
    routes.bind("all", "order.#")
    queues = Queues()
    dispatcher = DeadLetterDispatcher(
        ClusterPublisher(lambda q: None, queues), routes.router(), new_token=TOKENS
    )
    deliveries = tuple(Delivery(n, 0, False, 0) for n in (1, 2, 3))
    keys = ["order.1.eu", "order.2.us", "x"]
    held = [(d, letter(d.id, routing_key=key)[1]) for d, key in zip(deliveries, keys, strict=True)]
    dispatcher.dead_lettered("src", DeadLetter("expired", DeadLetterRoute("dlx", None), deliveries), held, 5)
    await eventually(lambda: len(queues.sent) == 2, "published to both")
    sent = {q: [h["x-amqp-routing-key"] for h in headers] for q, headers, _ in queues.sent}
    assert sent == {"all": ["order.1.eu", "order.2.us"], "eu": ["order.1.eu"]}  # "x" reached none: dropped
    death = queues.sent[0][1][0]["x-death"][0]
    assert (death["exchange"], death["routing-keys"]) == ("events", ["order.1.eu"])  # how it had come


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


def effect(target: str) -> tuple[DeadLetter, list[tuple[Delivery, StoredMessage]]]:
    delivery = Delivery(7, 0, False, 0)
    route = DeadLetterRoute("", target)
    return DeadLetter("rejected", route, (delivery,)), [(delivery, StoredMessage(b"d", {}, "utf8"))]


async def test_at_most_once_dead_letters_go_to_a_declared_target_with_their_death_and_no_publisher() -> None:
    remote = Remote()
    dispatcher = DeadLetterDispatcher(ClusterPublisher(lambda q: None, remote), ROUTER, new_token=TOKENS)
    dispatcher.dead_lettered("src", *effect("dlq"), now_ms=5)
    dispatcher.dead_lettered("src", *effect("missing"), now_ms=5)
    await asyncio.sleep(0.05)
    assert [(queue, bodies, publisher) for queue, bodies, publisher, _ in remote.calls] == [
        ("dlq", [b"d"], None)
    ]


async def test_the_dispatcher_runs_one_worker_beside_each_source_queue_this_node_leads() -> None:
    publisher = ClusterPublisher(lambda q: None)
    dispatcher = DeadLetterDispatcher(publisher, ROUTER, prefetch=5, new_token=TOKENS)  # the node's setting
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
    worker = DeadLetterWorker(source, publisher, ROUTER, worker_id="dlx-1")
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
    dispatcher = DeadLetterDispatcher(ClusterPublisher(lambda q: door), ROUTER, new_token=TOKENS)
    deliveries = tuple(Delivery(n, 0, False, 0) for n in range(1, 6))
    held = [(d, StoredMessage(bytes([d.id]) * LARGE, {}, "base64")) for d in deliveries]
    dispatcher.dead_lettered("src", DeadLetter("expired", TO_DLQ, deliveries), held, now_ms=5)
    await eventually(
        lambda: sum(len(bodies) for bodies, _, _ in door.published) == 5, "5 published", timeout=5
    )
    assert sorted(body for bodies, _, _ in door.published for body in bodies) == [m.body for _, m in held]
