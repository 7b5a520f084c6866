"""What the whole-node simulation checks once the faults are over and the network healed.

Within a bound of healing every queue serves from a leader and its replicas hold what the leader holds,
every node serves, deleted queues stay deleted; within the consumers' idle bound nothing is held by the
consumers that went away; nothing confirmed is missing beyond what unanswered at-most-once requests may
have taken, each message kept the id its confirm named, and a queue published to holds no body twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from cluster.errors import NodeError
from cluster.node import Node
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_replica import QueueReplica
from cluster.queues.queue_results import MessageRow
from node_simulation.history import Violation
from node_simulation.requests import ClientRequests, GaveUp
from node_simulation.workload import AUTO, PUBLISHED_TO, QUEUE_ARGUMENTS, ClientStats

CONVERGE_BOUND_S = 60.0


class AfterHealing:
    """The checks on the cluster the clients of `requests` used, and on what they counted in `stats`."""

    def __init__(self, requests: ClientRequests, stats: ClientStats) -> None:
        self.requests = requests
        self.sim = requests.sim
        self.stats = stats

    async def check(self, idle_bound_s: float) -> None:
        """Messages still move after healing (leases end, the leaders' timers dead-letter what went past
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
        problems += [self._unexpected(queue, found) for queue, found in held.items()]
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
                rows = await self.requests.at_door(name, queue, _browse_all)
            except (NodeError, ConnectionError, GaveUp):
                continue
            held = {bytes(row.body): row.id for row in rows}
            if queue in PUBLISHED_TO and len(held) < len(rows):
                twice = sorted(body for body in held if sum(bytes(row.body) == body for row in rows) > 1)
                raise Violation(f"queue {queue} holds {twice[:5]} more than once")
            return held
        return None

    async def _unacked(self, queue: str) -> int | None:
        """How many messages of `queue` its leader says are checked out to consumers that can go away
        (a durable consumer, Spark's, holds what it checked out until it settles), None without a leader."""

        async def unacked(node: Node) -> int:
            door = node.directory.leading_door(queue)
            assert node.host is not None
            replica = node.host.groups[door.group].app
            assert isinstance(replica, QueueReplica)
            durable = sum(info.unacknowledged for info in replica.machine.durable_consumers())
            return door.stats().messages_unacknowledged - durable

        for name in sorted(self.sim.nodes):
            try:
                return await self.requests.about(name, queue, unacked)
            except (NodeError, ConnectionError, GaveUp):
                continue
        return None

    def _replicas_alike(self, queue: str) -> bool:
        """Whether every member of `queue`'s group (as its leader's membership says; but a forgotten node)
        runs a replica that applied as far as the others, to the same state. A replica hosted by a node
        that is no longer a member is counted in `stats.stale_replicas` (docs/internals/cluster.md,
        "Hosting queue groups": one that missed its removal stays until its queue is deleted)."""
        replicas = {}
        members: tuple[str, ...] = ()
        for name, sim_node in self.sim.nodes.items():
            node = sim_node.running
            door = node.queues.get(queue) if node is not None else None
            group = node.host.groups.get(door.group) if door and node and node.host else None
            if group is None or not isinstance(group.app, QueueReplica):
                continue
            replicas[name] = (group.applied, b"".join(group.app.machine.snapshot_chunks()))
            if group.raft.is_leader:
                conf = group.raft.status().conf
                members = tuple(m for m in conf.voters + conf.learners if m not in self.sim.lost)
        self.stats.stale_replicas[queue] = sorted(set(replicas) - set(members))
        states = {replicas.get(member) for member in members}
        return bool(members) and len(states) == 1 and None not in states

    def _pending_dead_letters(self) -> dict[str, int]:
        """How many at-least-once dead letters each queue's leader still has to move."""
        pending = {}
        for sim_node in self.sim.nodes.values():
            node = sim_node.running
            for door in node.directory.leading_doors() if node is not None else []:
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
                found += [(node.name, queue) for queue in sorted(self.stats.deleted & known)]
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

    def _unexpected(self, queue: str, held: dict[bytes, int]) -> str:
        """What `queue` holds that no publisher sent (or sent only as a request that must be refused)."""
        sent = set().union(*(set(h.confirmed) | h.maybe for h in self.stats.histories.values()))
        unexpected = sorted(body[:40] for body in held if body not in sent)
        return f"queue {queue}: messages nobody published: {unexpected[:5]}" if unexpected else ""


async def _browse_all(door: QueueDoor) -> list[MessageRow]:
    rows: list[MessageRow] = []
    first = 0
    while True:
        page = await door.browse(first, 1 << 62, 1000)
        rows += page
        if len(page) < 1000:
            return rows
        first = page[-1].id + 1
