"""The clients of the whole-node simulation, and the checks on what they were answered.

Clients enter a node where its HTTP handlers do: the queue directory, the queue's door, and the
publish route that forwards to the leader over the peer transport (`api.forwarded_publish`). They act
as the quorumq client does: a request that meets a node that does not lead goes to the leader it
names; a publish is retried with the same publisher and seq until it is answered; a consumer whose
node lost leadership, or that was ended, registers again. Consumers come and go without cancelling,
and some work slowly, past the queue's lease.

Queue `strict` only ever has manual consumers and gets, so every confirmed message must be in it or
acknowledged at the end. Queue `auto` also has auto-ack gets and consumers, so a confirmed message may
be missing only as many times as such a request failed without an answer could have taken (at most
once allows losing what a failed request took, never what an answered one took).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from api.forwarded_publish import publish_routed
from api.publish_job import PublishJob
from cluster.errors import (
    BadRequest,
    NodeError,
    NotLeader,
    OutcomeUnknown,
    Refused,
    UnknownConsumer,
)
from cluster.membership.group_changes import MembershipRefused
from cluster.metadata.codec import POLICY_CODEC_VERSION
from cluster.node import Node
from cluster.queue_leader import QueueLeader
from cluster.queue_replica import QueueReplica
from cluster.queue_results import MessageRow, Outcome
from cluster.stored_message import StoredMessage
from node_simulation.history import QueueHistory, Violation
from node_simulation.request_errors import NodeUnreachable

if TYPE_CHECKING:
    from node_simulation.simulation import NodeSimulation


T = TypeVar("T")

STRICT, AUTO, DEAD = "strict", "auto", "dead"
QUEUE_ARGUMENTS: dict[str, dict[str, Any]] = {  # declared in this order
    DEAD: {"x-quorum-initial-group-size": 3},
    STRICT: {
        "x-quorum-initial-group-size": 3,
        "x-lease-period": 2000,
        "x-delivery-limit": 4,
        "x-overflow": "reject-publish",
        "x-dead-letter-queue": DEAD,
        "x-dead-letter-strategy": "at-least-once",
    },
    AUTO: {"x-quorum-initial-group-size": 3},
}
PUBLISHED_TO = (STRICT, AUTO)
SCRATCH = tuple(f"scratch-{i}" for i in range(3))  # declared and deleted again and again
POLICY = "simulation"
FILLER_BYTES = 256 * 1024  # one metadata entry of filler (a user record): the metadata grows between changes
FILLER_BURST = 10  # records written at a time: 2.5 MiB, more than the 2 MiB a round applies
PUBLISH_ATTEMPTS = 20
REQUEST_TIMEOUT_S = 10.0  # a client gives up on an answer after this (as the quorumq client does)
CONVERGE_BOUND_S = 60.0
POLL_WAIT_S = 1.0
GUEST = "guest"  # the loopback guest: the user a forwarded publish is made for


class GaveUp(Exception):
    """A client stopped waiting for an answer."""


@dataclass
class ClientStats:
    """What the clients did, and what at-most-once requests without an answer may have taken."""

    unanswered_auto: int = 0  # auto-ack gets and polls whose outcome the client never learnt
    unanswered_auto_limit: int = 0  # the messages those may have taken, at most
    forwarded: int = 0
    abandoned_consumers: int = 0
    members_added: int = 0
    members_removed: int = 0
    leaders_moved: int = 0
    filler_bytes: int = 0
    policies_changed: int = 0
    histories: dict[str, QueueHistory] = field(
        default_factory=lambda: {queue: QueueHistory() for queue in PUBLISHED_TO}
    )


class Clients:
    """Publishers, consumers and getters of the simulation's queues."""

    def __init__(self, sim: NodeSimulation, rng: random.Random) -> None:
        self.sim = sim
        self.rng = rng
        self.stats = ClientStats()
        self._making_requests = True
        self._declared = asyncio.Event()
        self._hint: dict[str, str] = {}  # queue -> the leader last heard of
        self._deleted: set[str] = set()  # scratch queues whose delete was answered, not declared since

    def start(self) -> list[asyncio.Task[None]]:
        """Start every client; they stop making requests at `stop_making_requests`."""
        workers = [
            self._declare_all(),
            self._publisher("p1"),
            self._publisher("p2"),
            self._consumer(STRICT, "c1"),
            self._consumer(STRICT, "c2"),
            self._consumer(AUTO, "c3"),
            self._auto_consumer(AUTO),
            self._getter(STRICT, auto_ack=False),
            self._getter(AUTO, auto_ack=True),
            self._operator(),
        ]
        return [self.sim.loop.create_task(worker) for worker in workers]

    def stop_making_requests(self) -> None:
        self._making_requests = False

    # -- requests -----------------------------------------------------------------------------------

    def _node_for(self, queue: str | None) -> str:
        hint = self._hint.get(queue) if queue is not None else None
        if hint is not None and self.rng.random() < 0.9:
            return hint
        return self.rng.choice(sorted(self.sim.nodes))

    async def _ask(self, name: str, call: Callable[[Node], Awaitable[T]]) -> T:
        """`call` on node `name`, or GaveUp after the client's timeout."""
        try:
            return await asyncio.wait_for(self.sim.request(name, call), REQUEST_TIMEOUT_S)
        except TimeoutError as exc:
            raise GaveUp(f"no answer from {name} within {REQUEST_TIMEOUT_S} s") from exc

    async def _at_door(self, name: str, queue: str, call: Callable[[QueueLeader], Awaitable[T]]) -> T:
        """`call` on the door of `queue` at node `name` (NotLeader there updates the belief)."""

        async def on_door(node: Node) -> T:
            return await call(node.directory.led(queue))

        try:
            return await self._ask(name, on_door)
        except NotLeader as exc:
            if exc.leader is not None:
                self._hint[queue] = exc.leader
            raise

    async def _pause(self, most_s: float = 0.2) -> None:
        await asyncio.sleep(self.rng.uniform(0.001, most_s))

    # -- workers ------------------------------------------------------------------------------------

    async def _declare_all(self) -> None:
        for queue, arguments in QUEUE_ARGUMENTS.items():

            async def declare(node: Node, queue: str = queue, arguments: dict[str, Any] = arguments) -> str:
                return await node.directory.declare(queue, arguments, None)

            while True:
                try:
                    await self._ask(self._node_for(None), declare)
                    break
                except (NodeError, ConnectionError, GaveUp):
                    await self._pause(0.5)
        self._declared.set()

    async def _publisher(self, publisher: str) -> None:
        await self._declared.wait()
        seq = 0
        while self._making_requests:
            seq += 1
            queue = self.rng.choice(PUBLISHED_TO)
            bodies = [f"{publisher}/{seq}/{i}".encode() for i in range(self.rng.randrange(1, 4))]
            history = self.stats.histories[queue]
            history.maybe.update(bodies)
            messages = [(StoredMessage(body, {}, "utf8"), None) for body in bodies]
            with_seq = (
                self.rng.random() < 0.7
            )  # without a seq a publish is sent once: a retry could duplicate
            job = PublishJob(messages, publisher if with_seq else None, seq if with_seq else None)
            for _ in range(PUBLISH_ATTEMPTS if with_seq else 1):
                try:
                    ids = await self._publish(queue, job)
                except (NodeError, ConnectionError, GaveUp):
                    await self._pause()
                    continue
                if ids is not None:
                    history.published(bodies, ids)
                    self.sim.stats.confirmed += len(bodies)
                    break
                await self._pause()
            await self._pause()

    async def _publish(self, queue: str, job: PublishJob) -> list[int] | None:
        """Publish `job` to the node believed to lead `queue` or, half the time, to any node, which
        forwards it over the peer transport as the HTTP route does; the ids confirmed, None when the
        answer was not a 201."""
        if self.rng.random() < 0.5:

            async def direct(door: QueueLeader) -> list[int]:
                return (await door.publish(job.messages, job.publisher, job.seq)).ids

            return await self._at_door(self._node_for(queue), queue, direct)

        async def routed(node: Node) -> tuple[int, dict[str, Any]]:
            return await publish_routed(self.sim.app_of(node), queue, job, GUEST, 0)

        self.stats.forwarded += 1
        status, body = await self._ask(self.rng.choice(sorted(self.sim.nodes)), routed)
        if status != 201:
            if isinstance(body.get("leader"), str):
                self._hint[queue] = body["leader"]
            return None
        return list(body["ids"])

    async def _consumer(self, queue: str, name: str) -> None:
        """A manual consumer: polls wherever the queue's leader is (checking that the node holds what it
        answered for it) and acks, sometimes after longer than the queue's lease; now and then it goes
        away without cancelling and a new one registers."""
        await self._declared.wait()
        tag: str | None = None
        while self._making_requests:
            node = self._node_for(queue)
            try:
                if tag is None or self.rng.random() < 0.02:
                    self.stats.abandoned_consumers += tag is not None
                    tag = await self._at_door(node, queue, _register(10, auto_ack=False))
                rows = await self._polled(node, queue, tag)
                if rows:
                    await self._work_on(queue, tag, rows)
            except (UnknownConsumer, Refused, BadRequest):
                tag = None  # ended (timed out, cancelled, its queue deleted): a new one registers
            except (NodeError, ConnectionError, GaveUp):
                pass  # the same consumer goes on at the leader it hears of
            await self._pause()

    async def _auto_consumer(self, queue: str) -> None:
        """An auto-ack consumer (AMQP's no-ack): what a poll answers is delivered once, ever."""
        await self._declared.wait()
        history = self.stats.histories[queue]
        tag: str | None = None
        limit = 5
        while self._making_requests:
            node = self._node_for(queue)
            try:
                if tag is None:
                    tag = await self._at_door(node, queue, _register(limit, auto_ack=True))
                rows = await self._polled(node, queue, tag, limit, auto_ack=True)
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
            await self._pause()

    async def _polled(
        self, node: str, queue: str, tag: str, limit: int = 5, *, auto_ack: bool = False
    ) -> list[MessageRow]:
        try:
            return await self._ask(node, _polled_checked(queue, tag, limit, auto_ack=auto_ack))
        except NotLeader as exc:
            if exc.leader is not None:
                self._hint[queue] = exc.leader
            raise

    async def _getter(self, queue: str, *, auto_ack: bool) -> None:
        """Gets: auto-ack ones deliver what they answer once, ever; manual ones are acked."""
        await self._declared.wait()
        history = self.stats.histories[queue]
        while self._making_requests:
            count = self.rng.randrange(1, 4)
            node = self._node_for(queue)

            async def get(door: QueueLeader, count: int = count) -> list[MessageRow]:
                return await door.get(count, auto_ack, None)

            try:
                rows = await self._at_door(node, queue, get)
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
            await self._pause()

    async def _operator(self) -> None:
        """An operator: removes a queue's replica from a node and adds one (the same node, often: shrink
        then grow), moves a queue's leader, and writes metadata between such changes (user records) so
        that replaying what lies between takes more than one round."""
        await self._declared.wait()
        while self._making_requests:
            await self._pause(1.5)
            queue = self.rng.choice(sorted(QUEUE_ARGUMENTS))
            action = self.rng.choices(
                ["members", "transfer", "filler", "scratch", "policy"], [3, 1, 4, 2, 1]
            )[0]
            try:
                if action == "members":
                    await self._change_members(queue)
                elif action == "transfer":
                    await self._move_leader(queue)
                elif action == "scratch":
                    await self._scratch(self.rng.choice(SCRATCH))
                elif action == "policy":
                    await self._change_policy()
                else:
                    await self._fill_metadata()
            except (NodeError, MembershipRefused, ConnectionError, GaveUp):
                continue

    async def _change_members(self, queue: str) -> None:
        node = self._node_for(queue)

        async def members(node_: Node) -> list[str]:
            return list(node_.directory.info(queue).members)

        current = await self._ask(node, members)
        outside = sorted(set(self.sim.nodes) - set(current))
        if len(current) > 2 and (not outside or self.rng.random() < 0.5):
            gone = self.rng.choice([m for m in current if m != node] or current)

            async def remove(node_: Node) -> list[str]:
                return await node_.membership.queues.delete(queue, gone)

            await self._ask(node, remove)
            self.stats.members_removed += 1
        elif outside:
            added = self.rng.choice(outside)

            async def add(node_: Node) -> list[str]:
                return await node_.membership.queues.add(queue, added)

            await self._ask(node, add)
            self.stats.members_added += 1

    async def _move_leader(self, queue: str) -> None:
        node = self._node_for(queue)
        to = self.rng.choice(sorted(self.sim.nodes))

        async def transfer(node_: Node) -> None:
            await node_.membership.queues.transfer_leader(queue, to)

        await self._ask(node, transfer)
        self.stats.leaders_moved += 1

    async def _scratch(self, queue: str) -> None:
        """Declare a queue, publish to it, delete it: once deleted, no node may bring it back."""
        self._deleted.discard(queue)

        async def declare(node: Node) -> str:
            return await node.directory.declare(queue, {"x-quorum-initial-group-size": 3}, None)

        async def publish(door: QueueLeader) -> None:
            await door.publish([(StoredMessage(b"scratch", {}, "utf8"), None)], None, None)

        async def purge(door: QueueLeader) -> int:
            return await door.purge()

        async def delete(node: Node) -> None:
            await node.directory.delete(queue)

        await self._ask(self._node_for(None), declare)
        with contextlib.suppress(NodeError, ConnectionError, GaveUp):
            await self._at_door(self._node_for(queue), queue, publish)
            await self._at_door(self._node_for(queue), queue, purge)
        await self._ask(self._node_for(None), delete)  # not found: a node whose metadata lags, perhaps
        self._deleted.add(queue)

    async def _change_policy(self) -> None:
        """Set (or clear) a policy over the simulation's queues: each leader applies it through its log."""
        leader = self.sim.meta_leader()
        if leader is None:
            return
        timeout = self.rng.choice([None, 20_000, 40_000])

        async def change(node: Node) -> None:
            node.formats.require_metadata(POLICY_CODEC_VERSION, "no policies")  # as the handler does
            if timeout is None:
                await node.metadata_door.clear_policy(POLICY)
            else:
                pattern = f"^({'|'.join(QUEUE_ARGUMENTS)})$"
                await node.metadata_door.set_policy(POLICY, pattern, {"consumer-timeout": timeout}, 0)

        with contextlib.suppress(ValueError):  # a node said it reads an older codec since the check: 409
            await self._ask(leader.name, change)
            self.stats.policies_changed += 1

    async def _fill_metadata(self) -> None:
        """A burst of user records, together more than one apply round of the metadata."""
        for _ in range(FILLER_BURST):
            leader = self.sim.meta_leader()
            if leader is None:
                return
            user = f"filler-{self.rng.randrange(50)}"
            secret = f"{self.rng.getrandbits(64):x}".ljust(FILLER_BYTES, "x")

            async def put(node: Node, user: str = user, secret: str = secret) -> None:
                await node.metadata_door.put_user(user, secret, [])

            await self._ask(leader.name, put)
            self.stats.filler_bytes += FILLER_BYTES

    async def _work_on(self, queue: str, consumer: str | None, rows: list[MessageRow]) -> None:
        """What a consumer does with its deliveries: mostly ack them, sometimes after longer than the
        queue's lease (touching them meanwhile, or not); now and then give them back (after a delay, or
        not) or reject them (dead-lettered where the queue has a target)."""
        ids = tuple(row.id for row in rows)
        if self.rng.random() < 0.1:
            for _ in range(self.rng.randrange(1, 4)):  # slow work: past the lease unless touched
                await asyncio.sleep(self.rng.uniform(0.8, 1.5))
                if self.rng.random() < 0.7:

                    async def touch(door: QueueLeader) -> None:
                        await door.touch(ids, consumer)

                    await self._at_door(self._node_for(queue), queue, touch)
        outcome = self.rng.choices([Outcome.ACK, Outcome.REQUEUE, Outcome.DISCARD], [85, 10, 5])[0]
        delay = self.rng.choice([None, None, 0, 200]) if outcome is Outcome.REQUEUE else None
        dead_lettered = QUEUE_ARGUMENTS[queue].get("x-dead-letter-queue") is not None
        if outcome is Outcome.ACK or (outcome is Outcome.DISCARD and not dead_lettered):
            # from the moment an ack (or a reject with nowhere to go) is sent, its messages may be gone
            self.stats.histories[queue].ack_sent.update(bytes(row.body) for row in rows)

        async def settle(door: QueueLeader) -> None:
            await door.settle(ids, consumer, outcome, delay_ms=delay)

        await self._at_door(self._node_for(queue), queue, settle)
        self.sim.stats.delivered += len(rows)

    def _unanswered_auto(self, limit: int) -> None:
        self.stats.unanswered_auto += 1
        self.stats.unanswered_auto_limit += limit

    # -- after healing ------------------------------------------------------------------------------

    async def check_after_heal(self, idle_bound_s: float) -> None:
        """Within a bound of healing every queue serves from a leader and its replicas hold what the
        leader holds, every node serves, deleted queues stay deleted; within the consumers' idle bound
        nothing is held by the consumers that went away; nothing confirmed is missing beyond what
        unanswered at-most-once requests may have taken, and each message kept the id its confirm named.

        Messages still move after healing (leases end, the leaders' timers dead-letter what went past
        its delivery limit), so what is missing counts only once the cluster holds still: every queue
        led, its replicas alike, no dead letter on its way, and still missing when looked at again."""
        loop = self.sim.loop
        deadline = loop.time() + CONVERGE_BOUND_S
        idle_deadline = loop.time() + idle_bound_s
        lost = "no leader serving every queue, or replicas apart"
        while lost:
            if loop.time() > deadline:
                raise Violation(f"{CONVERGE_BOUND_S} s after healing: {lost}")
            await asyncio.sleep(0.1)
            lost = await self._still_missing()
        await self._eventually(deadline, "nodes not serving after healing", self._unready)
        await self._eventually(
            deadline, "deleted queues still known or hosted after healing", self._hosting_deleted
        )
        for queue in sorted(QUEUE_ARGUMENTS):
            while (unacked := await self._unacked(queue)) != 0:
                if loop.time() > idle_deadline:
                    raise Violation(
                        f"queue {queue}: {unacked} messages still held {idle_bound_s} s after every "
                        "consumer went away"
                    )
                await asyncio.sleep(0.1)

    async def _still_missing(self) -> str:
        """What is wrong with the queues' contents now ("" when nothing): see `check_after_heal`."""
        held: dict[str, dict[bytes, int]] = {}
        for queue in QUEUE_ARGUMENTS:
            found = await self._held(queue)
            if found is None or not self._replicas_alike(queue):
                return f"queue {queue} has no leader serving, or its replicas are apart"
            held[queue] = found
        if pending := self._pending_dead_letters():
            return f"dead letters not yet in their target: {pending}"
        problems = [
            self._missing(
                queue, held[queue], held.get(QUEUE_ARGUMENTS[queue].get("x-dead-letter-queue", ""), {})
            )
            for queue in PUBLISHED_TO
        ]
        return "; ".join(problem for problem in problems if problem)

    async def _eventually(self, deadline: float, what: str, found: Callable[[], Any]) -> None:
        """Wait until `found()` finds nothing, or Violation `what` (with what it found) at `deadline`."""
        while wrong := found():
            if self.sim.loop.time() > deadline:
                raise Violation(f"{what}: {wrong}")
            await asyncio.sleep(0.1)

    async def _held(self, queue: str) -> dict[bytes, int] | None:
        """Every body the queue's leader holds, ready or checked out, with its id; None while no node
        leads it."""
        for name in sorted(self.sim.nodes):
            try:
                rows = await self._at_door(name, queue, _browse_all)
            except (NodeError, ConnectionError, GaveUp):
                continue
            return {bytes(row.body): row.id for row in rows}
        return None

    async def _unacked(self, queue: str) -> int | None:
        """How many messages of `queue` are checked out, as its leader says (None without a leader)."""

        async def unacked(door: QueueLeader) -> int:
            return door.stats().messages_unacknowledged

        for name in sorted(self.sim.nodes):
            try:
                return await self._at_door(name, queue, unacked)
            except (NodeError, ConnectionError, GaveUp):
                continue
        return None

    def _replicas_alike(self, queue: str) -> bool:
        """Whether every running replica of `queue` applied as far as the others, to the same state."""
        states = set()
        for sim_node in self.sim.nodes.values():
            node = sim_node.running
            door = node.queues.get(queue) if node is not None else None
            if door is None or node is None or node.host is None:
                continue
            group = node.host.groups.get(door.group)
            if group is None or not isinstance(group.app, QueueReplica):
                continue
            states.add((group.applied, b"".join(group.app.machine.snapshot_chunks())))
        return len(states) == 1

    def _pending_dead_letters(self) -> dict[str, int]:
        """How many at-least-once dead letters each queue's leader still has to move."""
        pending = {}
        for sim_node in self.sim.nodes.values():
            node = sim_node.running
            for door in node.directory.leading() if node is not None else []:
                assert node is not None and node.host is not None
                replica = node.host.groups[door.group].app
                if isinstance(replica, QueueReplica) and replica.machine.dead_letter_ids():
                    pending[door.name] = len(replica.machine.dead_letter_ids())
        return pending

    def _unready(self) -> dict[str, str]:
        """Each node that does not serve (down, without a metadata leader, or halted), and why."""
        unready = {}
        for name, sim_node in self.sim.nodes.items():
            node = sim_node.running
            readiness = node.status.readiness() if node is not None else "down"
            if readiness in ("down", "no_quorum", "halted"):
                unready[name] = readiness
        return unready

    def _hosting_deleted(self) -> list[tuple[str, str]]:
        """(node, queue) for each deleted queue a running node still lists or hosts."""
        found = []
        for sim_node in self.sim.nodes.values():
            node = sim_node.running
            if node is not None:
                known = set(node.metadata.queues) | set(node.queues)
                found += [(node.name, queue) for queue in sorted(self._deleted & known)]
        return found

    def _missing(self, queue: str, held: dict[bytes, int], dead: dict[bytes, int]) -> str:
        """What of the messages confirmed to `queue` is neither in it, in its dead-letter target (`dead`),
        nor gone with an ack (or an unanswered at-most-once request) of the clients, or is held under
        another id than its confirm named ("" when nothing)."""
        history = self.stats.histories[queue]
        delivered = history.ack_sent | set(history.auto_acked) | set(dead)
        missing = sorted(body for body in history.confirmed if body not in held and body not in delivered)
        allowed = self.stats.unanswered_auto_limit if queue == AUTO else 0
        if len(missing) > allowed:
            return (
                f"queue {queue}: {len(missing)} confirmed messages lost (at most {allowed} may have gone "
                f"with unanswered auto-ack requests): {missing[:5]}"
            )
        renamed = [
            body for body, message_id in history.confirmed.items() if held.get(body, message_id) != message_id
        ]
        if renamed:
            return f"queue {queue}: messages held under another id than confirmed: {renamed[:5]}"
        return ""


def _register(prefetch: int, *, auto_ack: bool) -> Callable[[QueueLeader], Awaitable[str]]:
    async def register(door: QueueLeader) -> str:
        return await door.register_consumer(prefetch, 0, None, None, auto_ack)

    return register


def _polled_checked(
    queue: str, tag: str, limit: int = 5, *, auto_ack: bool = False
) -> Callable[[Node], Awaitable[list[MessageRow]]]:
    """A poll and, in the same step of the loop (on the state that answered), the check that the
    node's applied state says this consumer holds every message answered (an auto-ack consumer: holds
    none of them any more)."""

    async def poll(node: Node) -> list[MessageRow]:
        door = node.directory.led(queue)
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


async def _browse_all(door: QueueLeader) -> list[MessageRow]:
    rows: list[MessageRow] = []
    first = 0
    while True:
        page = await door.browse(first, 1 << 62, 1000)
        rows += page
        if len(page) < 1000:
            return rows
        first = page[-1].id + 1
