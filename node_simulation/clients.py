"""The clients of the whole-node simulation: publishers, consumers and getters.

Clients enter a node where its HTTP handlers do: the queue directory, the queue's door, and the
publish route that forwards to the leader over the peer transport (`api.publishing`). They act
as the quorumq client does (`requests.ClientRequests`): a publish is retried with the same publisher and
seq until it is answered; a consumer follows its queue's leader and registers again once ended.
Consumers come and go without cancelling, and some work slowly, past the queue's lease. What each
request was answered goes into the queues' histories (`history.QueueHistory`); an operator
(`cluster_operator.Operator`) works beside them, and `after_healing.AfterHealing` checks the end.
"""

from __future__ import annotations

import asyncio
import random
import zlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from api.app_keys import METADATA
from api.exchange_publishing import exchange_known, publish_to_exchange
from api.publish_job import PublishJob
from api.publishing import publish_routed
from cluster.errors import BadRequest, LogGap, NodeError, OutcomeUnknown, Refused, UnknownConsumer
from cluster.node import Node
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_replica import QueueReplica
from cluster.queues.queue_results import MessageRow, Outcome, Position
from cluster.replication.proposals import MAX_OPERATION_BYTES
from cluster.replication.stored_message import GROUP_HEADER, MESSAGE_ID_HEADER, StoredMessage
from metadata_state.vhost_names import DEFAULT_VHOST
from node_simulation.after_healing import AfterHealing
from node_simulation.cluster_operator import Operator
from node_simulation.exchange_requests import bind, declare_exchange, declare_vhost
from node_simulation.history import Violation
from node_simulation.request_errors import NodeUnreachable
from node_simulation.requests import ClientRequests, GaveUp
from node_simulation.workload import (
    AUTO,
    FANNED_TO,
    FANOUT,
    GROUPS,
    PUBLISHED_TO,
    QUEUE_ARGUMENTS,
    STREAM,
    STRICT,
    VHOST,
    ClientStats,
)

if TYPE_CHECKING:
    from node_simulation.simulation import NodeSimulation

PUBLISH_ATTEMPTS = 20
OVERSIZED_SHARE = 0.004  # of publishes: one message larger than an operation between nodes may be
FANOUT_SHARE = 0.15  # of publishes: through exchange `fan`, to every queue bound to it
POLL_WAIT_S = 1.0
GUEST = "guest"  # the loopback guest: the user a forwarded publish is made for
DURABLE = "spark"  # the durable consumer's name


class Clients:
    """Publishers, consumers, getters and an operator of the simulation's queues."""

    def __init__(self, sim: NodeSimulation, rng: random.Random) -> None:
        self.sim = sim
        self.requests = ClientRequests(sim, rng)
        self.stats = ClientStats()
        self._operator = Operator(self.requests, self.stats)
        self._after_healing = AfterHealing(self.requests, self.stats)

    def start(self) -> list[asyncio.Task[None]]:
        """Start every client; they stop making requests at `stop_making_requests`."""
        workers = [
            self._declare_all(),
            self._publisher("p1"),
            self._publisher("p2"),
            self._consumer(STRICT),
            self._consumer(STRICT),
            self._consumer(AUTO),
            self._auto_consumer(AUTO),
            self._getter(STRICT, auto_ack=False),
            self._getter(AUTO, auto_ack=True),
            self._durable_reader(STREAM),
            self._operator.run(),
        ]
        return [self.sim.loop.create_task(worker) for worker in workers]

    def stop_making_requests(self) -> None:
        self.requests.active = False

    async def check_after_heal(self, idle_bound_s: float) -> None:
        """The checks once the faults are over (`AfterHealing.check`)."""
        await self._after_healing.check(idle_bound_s)

    # -- workers ------------------------------------------------------------------------------------

    async def _declare_all(self) -> None:
        await self._until_done(declare_vhost(VHOST))
        for queue, arguments in QUEUE_ARGUMENTS.items():

            async def declare(node: Node, queue: str = queue, arguments: dict[str, Any] = arguments) -> str:
                return await node.directory.declare(queue, arguments, None)

            await self._until_done(declare)
        await self._until_done(declare_exchange(FANOUT, "fanout"))
        for queue in FANNED_TO:
            await self._until_done(bind(FANOUT, queue))
        self.requests.declared.set()

    async def _until_done(self, call: Callable[[Node], Awaitable[Any]]) -> None:
        """`call` on any node (the metadata leader takes it) until one answers."""
        while True:
            try:
                await self.requests.ask(self.requests.node_for(None), call)
                return
            except (NodeError, ConnectionError, GaveUp):
                await self.requests.pause(0.5)

    async def _publisher(self, publisher: str) -> None:
        await self.requests.declared.wait()
        seq = 0
        while self.requests.active:
            seq += 1
            queue = self.requests.rng.choice(PUBLISHED_TO)
            if self.requests.rng.random() < OVERSIZED_SHARE:
                await self._publish_oversized(queue, f"{publisher}/{seq}/oversized".encode())
                continue
            bodies = [f"{publisher}/{seq}/{i}".encode() for i in range(self.requests.rng.randrange(1, 4))]
            if self.requests.rng.random() < FANOUT_SHARE:
                await self._publish_fanned(publisher, seq, bodies)
                continue
            history = self.stats.histories[queue]
            history.maybe.update(bodies)
            messages = [(StoredMessage(body, _headers(queue, body), "utf8"), None) for body in bodies]
            with_seq = self.requests.rng.random() < 0.7
            job = PublishJob(messages, publisher if with_seq else None, seq if with_seq else None)
            # without a seq or message ids a publish is sent once: a retry could duplicate
            safe_to_retry = with_seq or "x-dedupe-window" in QUEUE_ARGUMENTS[queue]
            for _ in range(PUBLISH_ATTEMPTS if safe_to_retry else 1):
                try:
                    ids = await self._publish(queue, job)
                except (NodeError, ConnectionError, GaveUp):
                    await self.requests.pause()
                    continue
                if ids is not None:
                    history.published(bodies, ids)
                    self.sim.stats.confirmed += len(bodies)
                    break
                await self.requests.pause()
            await self.requests.pause()

    async def _publish_fanned(self, publisher: str, seq: int, bodies: list[bytes]) -> None:
        """Publish through exchange `fan` on any node, with a seq (a retry enqueues only missing copies),
        until every copy is confirmed: each confirmed copy goes into its queue's history, those of a
        publish refused for another queue's sake included."""
        for queue in FANNED_TO:
            self.stats.histories[queue].maybe.update(bodies)
        messages = [(StoredMessage(body, {}, "utf8"), None) for body in bodies]
        job = PublishJob(messages, publisher, seq)

        async def routed(node: Node) -> tuple[int, dict[str, Any]]:
            app = self.sim.app_of(node)
            if not await exchange_known(app[METADATA], DEFAULT_VHOST, FANOUT, None):
                return 404, {}  # this node has not applied the declare yet: as the edges answer
            return await publish_to_exchange(app, DEFAULT_VHOST, FANOUT, "", job, False)

        for _ in range(PUBLISH_ATTEMPTS):
            try:
                status, body = await self.requests.ask(
                    self.requests.rng.choice(sorted(self.sim.nodes)), routed
                )
            except (NodeError, ConnectionError, GaveUp):
                await self.requests.pause()
                continue
            for queue, answer in body.get("routed", {}).items():
                if queue in FANNED_TO:
                    history = self.stats.histories[queue]
                    self.sim.stats.confirmed += sum(body not in history.confirmed for body in bodies)
                    history.published(bodies, list(answer["ids"]))
            if status == 201:
                self.stats.fanned_out += 1
                return
            await self.requests.pause()

    async def _publish_oversized(self, queue: str, prefix: bytes) -> None:
        """Publish one message that cannot fit an operation between nodes: it must be refused, and
        never show up in the queue (`AfterHealing` finds any body nobody published)."""
        body = prefix.ljust(MAX_OPERATION_BYTES + 1, b".")
        job = PublishJob([(StoredMessage(body, {}, "utf8"), None)], None, None)
        self.sim.stats.oversized += 1
        try:
            ids = await self._publish(queue, job)
        except (NodeError, ConnectionError, GaveUp):
            return
        if ids is not None:
            raise Violation(f"queue {queue}: a publish of {len(body)} bytes was confirmed as {ids}")

    async def _publish(self, queue: str, job: PublishJob) -> list[int] | None:
        """Publish `job` to the node believed to lead `queue` or, half the time, to any node, which
        forwards it over the peer transport as the HTTP route does; the ids confirmed, None when the
        answer was not a 201."""
        if self.requests.rng.random() < 0.5:

            async def direct(door: QueueDoor) -> list[int]:
                return (await door.publish(job.messages, job.publisher, job.seq)).ids

            return await self.requests.at_door(self.requests.node_for(queue), queue, direct)

        async def routed(node: Node) -> tuple[int, dict[str, Any]]:
            return await publish_routed(self.sim.app_of(node), queue, job, GUEST, 0)

        self.stats.forwarded += 1
        status, body = await self.requests.ask(self.requests.rng.choice(sorted(self.sim.nodes)), routed)
        if status != 201:
            if isinstance(body.get("leader"), str):
                self.requests.hint[queue] = body["leader"]
            return None
        return list(body["ids"])

    async def _consumer(self, queue: str) -> None:
        """A manual consumer: polls wherever the queue's leader is (checking that the node holds what it
        answered for it) and acks, sometimes after longer than the queue's lease; now and then it goes
        away without cancelling and a new one registers."""
        await self.requests.declared.wait()
        tag: str | None = None
        while self.requests.active:
            node = self.requests.node_for(queue)
            try:
                if tag is None or self.requests.rng.random() < 0.02:
                    self.stats.abandoned_consumers += tag is not None
                    tag = await self.requests.at_door(node, queue, _register(10, auto_ack=False))
                rows = await self.requests.about(node, queue, _polled_checked(queue, tag))
                if rows:
                    await self._work_on(queue, tag, rows)
            except (UnknownConsumer, Refused, BadRequest):
                tag = None  # ended (timed out, cancelled, its queue deleted): a new one registers
            except (NodeError, ConnectionError, GaveUp):
                pass  # the same consumer goes on at the leader it hears of
            await self.requests.pause()

    async def _auto_consumer(self, queue: str) -> None:
        """An auto-ack consumer (AMQP's no-ack): what a poll answers is delivered once, ever."""
        await self.requests.declared.wait()
        history = self.stats.histories[queue]
        tag: str | None = None
        limit = 5
        while self.requests.active:
            node = self.requests.node_for(queue)
            try:
                if tag is None:
                    tag = await self.requests.at_door(node, queue, _register(limit, auto_ack=True))
                rows = await self.requests.about(
                    node, queue, _polled_checked(queue, tag, limit, auto_ack=True)
                )
            except (UnknownConsumer, Refused, BadRequest):
                tag = None
            except NodeUnreachable:
                pass
            except (OutcomeUnknown, ConnectionError, GaveUp):
                self._unanswered_auto(limit)
            except NodeError:
                pass
            else:
                history.auto_delivered([bytes(row.body) for row in rows])
                self.sim.stats.delivered += len(rows)
            await self.requests.pause()

    async def _getter(self, queue: str, *, auto_ack: bool) -> None:
        """Gets: auto-ack ones deliver what they answer once, ever; manual ones are acked."""
        await self.requests.declared.wait()
        history = self.stats.histories[queue]
        while self.requests.active:
            count = self.requests.rng.randrange(1, 4)
            node = self.requests.node_for(queue)

            async def get(door: QueueDoor, count: int = count) -> list[MessageRow]:
                return await door.get(count, auto_ack, None)

            try:
                rows = await self.requests.at_door(node, queue, get)
                if auto_ack:
                    history.auto_delivered([bytes(row.body) for row in rows])
                    self.sim.stats.delivered += len(rows)
                elif rows:
                    await self._work_on(queue, None, rows)
            except NodeUnreachable:
                pass
            except (OutcomeUnknown, ConnectionError, GaveUp):
                if auto_ack:
                    self._unanswered_auto(count)
            except NodeError:
                pass
            await self.requests.pause()

    async def _durable_reader(self, queue: str) -> None:
        """A durable consumer, read as Spark's source reads one: check out a batch, read its range (twice
        now and then, as a retried partition does), settle it; every read of a seq gives one message."""
        await self.requests.declared.wait()
        history = self.stats.histories[queue]
        while self.requests.active:
            await self.requests.pause(0.5)
            count = self.requests.rng.randrange(1, 20)

            async def checkout(door: QueueDoor, count: int = count) -> Position:
                return await door.durable_checkout(DURABLE, count)

            try:
                position = await self.requests.at_door(self.requests.node_for(queue), queue, checkout)
                if position.end == position.settled:
                    continue
                for _ in range(self.requests.rng.choice([1, 1, 2])):
                    rows = await self.requests.at_door(
                        self.requests.node_for(queue), queue, _durable_log(position.settled, position.end)
                    )
                    history.durable_read([(row.seq or 0, row.id, bytes(row.body)) for row in rows])
                history.ack_sent.update(bytes(row.body) for row in rows)
                await self.requests.at_door(
                    self.requests.node_for(queue), queue, _durable_settle(position.end)
                )
                self.sim.stats.delivered += len(rows)
            except (LogGap, NodeError, ConnectionError, GaveUp):
                continue

    async def _work_on(self, queue: str, consumer: str | None, rows: list[MessageRow]) -> None:
        """What a consumer does with its deliveries: mostly ack them, sometimes after longer than the
        queue's lease (touching them meanwhile, or not); now and then give them back (after a delay, or
        not) or reject them (dead-lettered where the queue has a target)."""
        ids = tuple(row.id for row in rows)
        if self.requests.rng.random() < 0.1:
            for _ in range(self.requests.rng.randrange(1, 4)):  # slow work: past the lease unless touched
                await asyncio.sleep(self.requests.rng.uniform(0.8, 1.5))
                if self.requests.rng.random() < 0.7:

                    async def touch(door: QueueDoor) -> None:
                        await door.touch(ids, consumer)

                    await self.requests.at_door(self.requests.node_for(queue), queue, touch)
        outcome = self.requests.rng.choices([Outcome.ACK, Outcome.REQUEUE, Outcome.DISCARD], [85, 10, 5])[0]
        delay = self.requests.rng.choice([None, None, 0, 200]) if outcome is Outcome.REQUEUE else None
        dead_lettered = QUEUE_ARGUMENTS[queue].get("x-dead-letter-queue") is not None
        if outcome is Outcome.ACK or (outcome is Outcome.DISCARD and not dead_lettered):
            # from the moment an ack (or a reject with nowhere to go) is sent, its messages may be gone
            self.stats.histories[queue].ack_sent.update(bytes(row.body) for row in rows)

        async def settle(door: QueueDoor) -> None:
            await door.settle(ids, consumer, outcome, delay_ms=delay)

        await self.requests.at_door(self.requests.node_for(queue), queue, settle)
        self.sim.stats.delivered += len(rows)

    def _unanswered_auto(self, limit: int) -> None:
        self.stats.unanswered_auto += 1
        self.stats.unanswered_auto_limit += limit


def _durable_log(start: int, end: int) -> Callable[[QueueDoor], Awaitable[list[MessageRow]]]:
    async def read(door: QueueDoor) -> list[MessageRow]:
        return await door.read_durable_log(DURABLE, start, end)

    return read


def _durable_settle(below: int) -> Callable[[QueueDoor], Awaitable[Position]]:
    async def settle(door: QueueDoor) -> Position:
        return await door.durable_settle(DURABLE, below)

    return settle


def _register(prefetch: int, *, auto_ack: bool) -> Callable[[QueueDoor], Awaitable[str]]:
    async def register(door: QueueDoor) -> str:
        return await door.register_consumer(prefetch, 0, None, None, auto_ack)

    return register


def _polled_checked(
    queue: str, tag: str, limit: int = 5, *, auto_ack: bool = False
) -> Callable[[Node], Awaitable[list[MessageRow]]]:
    """A poll and, in the same step of the loop (on the state that answered), the check that the
    node's applied state says this consumer holds every message answered (an auto-ack consumer: holds
    none of them any more)."""

    async def poll(node: Node) -> list[MessageRow]:
        door = node.directory.leading_door(queue)
        rows = await door.poll(tag, limit, POLL_WAIT_S)
        assert node.host is not None
        replica = node.host.groups[door.group].app
        assert isinstance(replica, QueueReplica)
        held = {delivery.id for delivery in replica.machine.checked_out(tag)}
        wrong = [row.id for row in rows if (row.id in held) == auto_ack]
        if wrong:
            what = "still holds" if auto_ack else "does not hold"
            raise Violation(f"queue {queue}: a poll of {tag[:8]} answered {wrong}, which it {what}")
        return rows

    return poll


def _headers(queue: str, body: bytes) -> dict[str, Any]:
    """A published message's headers: its body as its id on a queue with a deduplication window, and on
    a grouped queue one of GROUPS for three messages in four (chosen by the body)."""
    arguments = QUEUE_ARGUMENTS[queue]
    headers: dict[str, Any] = {MESSAGE_ID_HEADER: body.decode()} if "x-dedupe-window" in arguments else {}
    group = zlib.crc32(body) % (len(GROUPS) + 1)
    if arguments.get("x-message-groups") and group < len(GROUPS):
        headers[GROUP_HEADER] = GROUPS[group]
    return headers
