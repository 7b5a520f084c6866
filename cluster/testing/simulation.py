"""Deterministic simulation of quorumq nodes as production runs them: one seed replays a run exactly.

Every node is a real `RaftHost` (the production round: early sends before the leader's write, steps and
ticks while a write is under way, unsynced commit-only rounds) over a real `NodeStore` and a real
`QueueReplica`; only the disk (`SimulatedDatabase`) and the network (`SimulatedNetwork`) are simulated,
both driven by the seed. Faults: message loss, delay, reordering and duplication; partitions; process
crashes (unsynced writes survive); power loss of one node or of all at once (unsynced writes are lost,
an ordered prefix may survive); slow fsyncs that stay under way for many steps; membership changes as
production makes them (learners added, promoted once they hold the log, members removed), one voter
with learners included; leadership transfers; snapshots and their transfer to laggards; and
(when weighted) wiped disks: a node restarts on an empty database, a new incarnation, and re-creates its
group from its bootstrap configuration; the leader replaces its replica as production does (remove the
old incarnation, add the new one as a learner).

`SafetyChecker` checks Raft's invariants after every step and every delivered frame; every publish a
client saw confirmed must, after healing, be in every member's queue with its body, and every publish
made to a process still running must have been answered. One seed reproduces a failure, whatever
PYTHONHASHSEED is (the summary ends with a digest of every frame delivered):

    python -m cluster.testing.simulation --first-seed 17 --seeds 1
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import sys
from dataclasses import dataclass, field, replace
from typing import NoReturn

from cluster.queues.queue_replica import QueueReplica
from cluster.replication.entry_codec import QUEUE_OP_VERSION, encode_queue_op
from cluster.replication.proposals import ProposalFailed
from cluster.replication.raft_host import RaftHost, Round
from cluster.replication.stored_message import StoredMessage
from cluster.testing.simulated_network import SimulatedNetwork
from queue_state.arguments import QueueConfig
from queue_state.commands import Enqueue, EntryMeta, NewMessage
from queue_state.effects import Enqueued
from raft_log.confchange import ConfChange, ConfChangeKind, random_conf_change
from raft_log.errors import RaftError
from raft_log.storage import records
from raft_log.storage.keys import GroupKeys
from raft_log.storage.node_store import NodeStore
from raft_log.testing.invariants import InvariantViolation, LivenessViolation, SafetyChecker, chain_digest
from raft_log.testing.simulated_database import SimulatedDatabase
from raft_log.types import ConfState

GROUP = "q-sim"
QUEUE = "sim"
TICK_MS = 10
EMPTY_DIGEST = bytes(32)


class SimulationFatal(AssertionError):
    """A node hit a fatal error (production would exit the process)."""


def _fatal(what: str) -> NoReturn:
    raise SimulationFatal(what)


@dataclass(frozen=True, slots=True)
class Faults:
    """How hostile a run is: network faults, how often a synced write is slow, and action weights."""

    drop: float = 0.05
    duplicate: float = 0.03
    reorder_window: int = 6
    slow_fsync: float = 0.2
    slow_fsync_steps: int = 40
    weights: tuple[tuple[str, int], ...] = (  # an action of weight 0 never happens
        ("deliver", 120),
        ("round", 80),
        ("tick", 45),
        ("publish", 20),
        ("crash", 1),
        ("power_loss", 2),
        ("restart", 6),
        ("partition", 1),
        ("heal", 3),
        ("membership", 5),
        ("transfer", 1),
        ("wipe", 0),
    )
    power_loss_all: float = 0.2  # the share of power losses that take every node down at once
    rot: float = 0.0  # the share of restarts that find one of the node's newest entries damaged on disk


CALM = Faults(drop=0.0, duplicate=0.0, reorder_window=1, slow_fsync=0.0)


@dataclass(slots=True)
class _Write:
    """A round whose batch is being written; it returns after `steps_left` more steps."""

    round: Round
    steps_left: int


@dataclass(slots=True)
class SimNode:
    """One node: its disk survives crashes (minus what power loss takes), everything else does not."""

    name: str
    db: SimulatedDatabase = field(default_factory=SimulatedDatabase)
    bootstrap: ConfState = field(default_factory=ConfState)
    host: RaftHost | None = None
    store: NodeStore | None = None
    replica: QueueReplica | None = None
    write: _Write | None = None
    joined: bool = False  # a settled leader counted it a member
    removed: bool = False  # then it no longer did: the replica is (or will be) dropped
    applied: int = 0
    digest: bytes = EMPTY_DIGEST
    wipes: int = 0  # how often its disk was wiped
    replacing: bool = False  # wiped: its old replica is to be removed and its new incarnation added

    @property
    def alive(self) -> bool:
        return self.host is not None

    @property
    def running(self) -> RaftHost:
        """The running host (a crashed node has none)."""
        if self.host is None:
            raise RuntimeError(f"node {self.name} is down")
        return self.host

    @property
    def incarnation(self) -> str:
        """The incarnation of its database (a new one after each wipe)."""
        return incarnation_of(self.name, self.wipes)


def incarnation_of(name: str, wipes: int) -> str:
    return f"{name}.{wipes}"


@dataclass(slots=True)
class SimStats:
    """What a run did."""

    steps: int = 0
    leaders: int = 0
    crashes: int = 0
    power_losses: int = 0
    slow_writes: int = 0
    snapshots_installed: int = 0
    conf_changes: int = 0
    confirmed: int = 0
    committed: int = 0
    wipes: int = 0


@dataclass(frozen=True, slots=True)
class _Publish:
    body: bytes
    future: asyncio.Future
    host: RaftHost  # the process it was made to: a client of one that crashed sees its connection close


class Simulation:
    """A seeded run of quorumq nodes; `run(steps)` raises on any safety or liveness violation."""

    def __init__(
        self,
        seed: int,
        voters: int = 3,
        learners: int = 0,
        faults: Faults | None = None,
        snapshot_every: int = 0,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = faults if faults is not None else Faults()
        self.snapshot_every = snapshot_every or self.rng.randrange(4, 24)
        # drawn apart from self.rng, so that a seed's other choices stay what they were before the rule
        self.snapshot_every_bytes = random.Random(f"{seed}/snapshot-bytes").randrange(256, 8192)
        self.checker = SafetyChecker()
        self.stats = SimStats()
        self.network = SimulatedNetwork()
        self.nodes: dict[str, SimNode] = {}
        self.confirmed: dict[int, bytes] = {}  # message id -> body, of every confirmed publish
        self._publishes: list[_Publish] = []
        self._trace = hashlib.sha256()
        self._next_node = 1
        names = [f"n{i}" for i in range(1, voters + learners + 1)]
        incarnations = tuple((name, incarnation_of(name, 0)) for name in names)
        bootstrap = ConfState(tuple(names[:voters]), tuple(names[voters:]), incarnations)
        for _ in names:
            self._add_node(bootstrap)
        self._actions = [name for name, _ in self.faults.weights]
        self._weights = [weight for _, weight in self.faults.weights]

    # ------------------------------------------------------------------ running

    def run(self, steps: int) -> SimStats:
        """`steps` random actions with checks after each, then heal and require liveness."""
        return asyncio.run(self._run(steps))

    async def _run(self, steps: int) -> SimStats:
        for node in self.nodes.values():
            self._start(node)
        for _ in range(steps):
            self.step()
        self.heal_and_check()
        return self.stats

    def step(self) -> None:
        """One random action, one step of time for writes under way, then the checks."""
        action = self.rng.choices(self._actions, self._weights)[0]
        getattr(self, f"_do_{action}")()
        for node in self._alive():
            if node.write is not None:
                node.write.steps_left -= 1
                if node.write.steps_left <= 0:
                    self._finish_write(node)
        self.stats.steps += 1
        self._collect_publishes()
        self._check_leaders()
        self._drop_removed()
        self._replace_wiped()

    def heal_and_check(self, max_rounds: int = 400) -> None:
        """Heal everything and restart every node; a leader must then commit, every member catch up, and
        every confirmed message be in every member's queue."""
        self.network.heal()
        self.faults = CALM
        for node in self.nodes.values():
            if not node.alive:
                self._start(node)
        marker: _Publish | None = None
        for _ in range(max_rounds):
            for node in self._alive():
                node.running.tick()
            self._settle()
            self._check_leaders()
            self._drop_removed()
            self._replace_wiped()
            leader = self._leader()
            if leader is None:
                continue
            if marker is None or (marker.future.done() and not self._is_confirmed(marker)):
                marker = self._publish(leader)
                continue
            if self._is_confirmed(marker) and self._members_caught_up(leader):
                self._check_queues(leader)
                self._check_answered()
                return
        raise LivenessViolation(f"seed {self.seed}: no leader confirmed a publish after healing")

    def _settle(self, max_iterations: int = 10_000) -> None:
        """Finish every write, deliver every message and run every round until the cluster is quiet."""
        for _ in range(max_iterations):
            for node in self._alive():
                if node.write is not None:
                    self._finish_write(node)
            busy = [n for n in self._alive() if n.running.has_work()]
            if not busy and not self.network.in_flight:
                self._collect_publishes()
                return
            for node in busy:
                self._begin_round(node)
            while self.network.in_flight:
                self._deliver(0)
        raise LivenessViolation(f"seed {self.seed}: the cluster never went quiet")

    # ------------------------------------------------------------------ actions

    def _do_deliver(self) -> None:
        for _ in range(self.rng.randrange(1, 5)):
            self._deliver_one()

    def _deliver_one(self) -> None:
        if not self.network.in_flight:
            return
        position = self.rng.randrange(min(len(self.network.in_flight), self.faults.reorder_window))
        if self.rng.random() < self.faults.drop:
            self.network.in_flight.pop(position)
            return
        if self.rng.random() < self.faults.duplicate:
            self.network.duplicate(position, self.rng.randrange(len(self.network.in_flight) + 1))
        self._deliver(position)

    def _do_round(self) -> None:
        ready = [n for n in self._alive() if n.write is None and n.running.has_work()]
        if ready:
            self._begin_round(self.rng.choice(ready))

    def _do_tick(self) -> None:
        alive = self._alive()
        if alive and self.rng.random() < 0.2:
            self.rng.choice(alive).running.tick()  # one clock runs ahead
            return
        for node in alive:
            node.running.tick()

    def _do_publish(self) -> None:
        leader = self._some_leader()
        if leader is not None:
            self._publish(leader)

    def _do_crash(self) -> None:
        alive = self._alive()
        if alive:
            self._crash(self.rng.choice(alive))

    def _do_power_loss(self) -> None:
        victims = list(self.nodes.values())
        writing = [n for n in victims if n.write is not None]
        if self.rng.random() >= self.faults.power_loss_all:
            # Half the time the power fails under a node whose round is being written: the moment that
            # tests what the round let out before its fsync.
            victims = [self.rng.choice(writing if writing and self.rng.random() < 0.5 else victims)]
        for node in victims:
            if node.alive:
                self._crash(node)
            node.db.lose_power(self.rng.randrange(node.db.unsynced_writes + 1))
        self.stats.power_losses += 1

    def _do_restart(self) -> None:
        down = [n for n in self.nodes.values() if not n.alive]
        if down:
            node = self.rng.choice(down)
            if self.faults.rot and self.rng.random() < self.faults.rot:
                self._rot_a_newest_entry(node)
            self._start(node)

    def _rot_a_newest_entry(self, node: SimNode) -> None:
        """Damage one of the three newest log entries after the snapshot on the node's disk (a fault
        recovery must not hide). Entries the snapshot covers are left alone: queued bodies are read from
        them, and a repair from the leader does not resend them (not handled yet,
        docs/internals/storage.md)."""
        group_keys = GroupKeys(GROUP)
        meta = node.db.get(group_keys.snapshot_meta)
        if meta is None:
            return
        first = records.decode_snapshot_meta(group_keys.snapshot_meta, meta).index + 1
        newest = [key for key, _ in node.db.scan(group_keys.entry(first), group_keys.entries_end)][-3:]
        if newest:
            node.db.rot(self.rng.choice(newest))

    def _do_partition(self) -> None:
        self.network.partition({name: self.rng.randrange(2) for name in self.nodes})

    def _do_heal(self) -> None:
        self.network.heal()

    def _do_membership(self) -> None:
        leader = self._some_leader()
        if leader is None:
            return
        status = leader.running.groups[GROUP].raft.status()
        conf = status.conf
        room = len(conf.voters + conf.learners) < 5 and self._next_node <= 8
        holding = [member for member, peer in status.progress.items() if peer.match]
        change = random_conf_change(self.rng, conf, f"n{self._next_node}" if room else None, holding)
        if change.kind is ConfChangeKind.ADD_LEARNER:
            change = replace(change, incarnation=incarnation_of(change.node, 0))
        try:
            leader.running.propose_conf_change(GROUP, change)
        except (RaftError, ProposalFailed):
            return
        self.stats.conf_changes += 1
        if change.node not in self.nodes:
            self._start(self._add_node(ConfState()))

    def _do_wipe(self) -> None:
        """A node's disk is replaced by an empty one (it restarts later as a new incarnation), one node at
        a time: a member is replaced before another disk is wiped."""
        if any(n.replacing for n in self.nodes.values()):
            return
        node = self.rng.choice(list(self.nodes.values()))
        node.replacing = not node.removed
        if node.alive:
            self._crash(node)
        node.db = SimulatedDatabase()
        node.wipes += 1
        self.stats.wipes += 1

    def _do_transfer(self) -> None:
        leader = self._some_leader()
        if leader is None:
            return
        voters = [v for v in leader.running.groups[GROUP].raft.status().conf.voters if v != leader.name]
        if voters:
            leader.running.transfer_leadership(GROUP, self.rng.choice(voters))

    # ------------------------------------------------------------------ the production round

    def _begin_round(self, node: SimNode) -> None:
        assert node.host is not None and node.write is None
        round_ = node.running.begin_round()
        if round_ is None:
            return
        slow = round_.sync and self.rng.random() < self.faults.slow_fsync
        self.stats.slow_writes += slow
        node.write = _Write(round_, self.rng.randrange(2, self.faults.slow_fsync_steps) if slow else 0)
        if not slow:
            self._finish_write(node)

    def _finish_write(self, node: SimNode) -> None:
        """The round's write returns: the rest of the round runs, as `RaftHost.process_once` does."""
        assert node.host is not None and node.store is not None and node.write is not None
        round_, node.write = node.write.round, None
        if round_.taken is not None:
            node.store.write_taken(round_.taken, round_.sync)
            node.store.finish(round_.taken)
        group = node.running.groups.get(GROUP)
        if group is not None:
            for r in round_.readies:
                for entry in r.ready.entries:
                    self.checker.observe_persisted(node.name, entry, group.log.term(entry.index - 1))
        node.running.end_round(round_)
        if group is None or node.running.groups.get(GROUP) is not group:
            return
        term = group.raft.term
        for r in round_.readies:
            snapshot = r.ready.snapshot
            if snapshot is not None and snapshot.meta.index > 0:
                self.stats.snapshots_installed += 1
                node.applied, node.digest = snapshot.meta.index, self.checker.digest_at(snapshot.meta.index)
            for entry in r.ready.committed_entries:
                if entry.index != node.applied + 1:
                    raise InvariantViolation(f"{node.name} applied {entry.index} after {node.applied}")
                node.digest = chain_digest(node.digest, entry)
                node.applied = entry.index
                self.checker.observe_applied(node.name, entry, term, node.digest)
                self.stats.committed = max(self.stats.committed, entry.index)

    def _drop_removed(self) -> None:
        """As a node does once its removal is done (applied on a settled leader): drop the replica."""
        leader = self._leader()
        if leader is None:
            return
        group = leader.running.groups[GROUP]
        if group.raft.entry_term(group.applied) != group.raft.term:
            return  # the leader has not applied an entry of its term: its membership may be old
        members = group.conf.voters + group.conf.learners
        for node in self.nodes.values():
            if node.name in members:
                node.joined = True
            elif node.joined and not node.removed and node is not leader:
                node.removed = True
                if node.host is not None:
                    if node.write is not None:
                        self._finish_write(node)
                    node.running.close_group(GROUP, drop=True)
                    node.replica = None

    def _replace_wiped(self) -> None:
        """As a settled leader does (`cluster.membership.queue_members`): a member that runs as another
        incarnation than the membership records is removed; once its replica is dropped it is added back
        as a learner with its new incarnation (again, should that change be lost)."""
        leader = self._leader()
        if leader is None:
            return
        group = leader.running.groups[GROUP]
        if group.raft.entry_term(group.applied) != group.raft.term:
            return
        members = group.conf.voters + group.conf.learners
        for node in self.nodes.values():
            if not node.replacing or node is leader:
                continue
            if node.name in members:
                if group.conf.incarnation_of(node.name) == node.incarnation:
                    node.replacing = False
                    continue
                change = ConfChange(ConfChangeKind.REMOVE, node.name)
            elif node.joined and not node.removed:
                continue  # `_drop_removed` drops the old replica first
            else:
                change = ConfChange(ConfChangeKind.ADD_LEARNER, node.name, node.incarnation)
            try:
                leader.running.propose_conf_change(GROUP, change)
            except (RaftError, ProposalFailed):
                return
            self.stats.conf_changes += 1
            if change.kind is ConfChangeKind.ADD_LEARNER:  # the new replica starts empty, as a joining one
                node.removed = node.joined = False
                node.bootstrap = ConfState()
                if node.alive and GROUP not in node.running.groups:
                    self._open_group(node)
            return

    # ------------------------------------------------------------------ nodes

    def _add_node(self, bootstrap: ConfState) -> SimNode:
        node = SimNode(f"n{self._next_node}", bootstrap=bootstrap)
        node.joined = node.name in bootstrap.voters + bootstrap.learners
        self._next_node += 1
        self.nodes[node.name] = node
        self.network.add(node.name)
        return node

    def _start(self, node: SimNode) -> None:
        """Start (or restart) a node on what its disk holds, recovering it as `NodeStore.open` does."""
        node.db.reopen()
        store = NodeStore.recover(node.db, lambda: node.incarnation)
        self.network.incarnations[node.name] = store.incarnation
        host = RaftHost(
            node.name,
            store,
            self.network.transport(node.name),
            tick_ms=TICK_MS,
            election_ticks=10,
            heartbeat_ticks=1,
            snapshot_every=self.snapshot_every,
            snapshot_every_bytes=self.snapshot_every_bytes,
            batch_delay_ms=0,
            rng=random.Random(self.rng.getrandbits(64)),
            on_fatal=_fatal,
        )
        node.host, node.store, node.write = host, store, None
        if node.removed:
            if GROUP in store.group_ids():
                store.drop_group(GROUP)
                store.commit(sync=True)
            return
        self._open_group(node)

    def _open_group(self, node: SimNode) -> None:
        """Open the node's replica, creating it from the node's bootstrap membership if its disk has none."""
        assert node.host is not None and node.store is not None
        store = node.store
        if GROUP not in store.group_ids():
            store.create_group(GROUP, node.bootstrap)
            store.commit(sync=True)
        node.replica = QueueReplica(QUEUE, GROUP, QueueConfig(), store.group(GROUP))
        group = node.running.open_group(GROUP, node.replica)
        node.applied = group.applied
        node.digest = self.checker.digest_at(group.applied) if group.applied else EMPTY_DIGEST

    def _crash(self, node: SimNode) -> None:
        """The process dies; a write under way reached the operating system (its fsync had not returned)
        or did not."""
        assert node.host is not None and node.store is not None
        if node.write is not None and node.write.round.taken is not None and self.rng.random() < 0.5:
            node.store.write_taken(node.write.round.taken, sync=False)
        node.db.close()
        node.host = node.store = node.replica = node.write = None
        self.stats.crashes += 1

    def _on_frame(self, to: str, frm: str, kind: int, body: bytes) -> None:
        node = self.nodes[to]
        if node.host is not None:
            node.running.on_frame(frm, kind, body)

    def _deliver(self, position: int) -> None:
        frame = self.network.deliver(position, self._on_frame)
        if frame is not None:
            self._trace.update(f"{frame.frm}>{frame.to}:{frame.kind}:".encode() + frame.body)
            self._check_leaders()

    @property
    def trace_digest(self) -> str:
        """A digest of every frame delivered so far, in order: equal for two runs of one seed."""
        return self._trace.hexdigest()

    # ------------------------------------------------------------------ publishing and checking

    def _publish(self, leader: SimNode) -> _Publish:
        assert leader.host is not None
        body = f"{self.seed}/{self.stats.steps}/{len(self._publishes)}".encode()
        meta = EntryMeta(self.stats.steps * TICK_MS)
        command = Enqueue(messages=(NewMessage(len(body)),))
        version = len(self._publishes) % (QUEUE_OP_VERSION + 1)  # every version, as mid-upgrade
        op = encode_queue_op(meta, command, [StoredMessage(body, {}, "utf8")], version)
        try:
            future = leader.running.submit(GROUP, op)
        except ProposalFailed as failed:
            future = asyncio.get_running_loop().create_future()
            future.set_exception(failed)
        publish = _Publish(body, future, leader.running)
        self._publishes.append(publish)
        return publish

    def _collect_publishes(self) -> None:
        """Record what clients saw confirmed."""
        waiting = []
        for publish in self._publishes:
            if not publish.future.done():
                waiting.append(publish)
            elif self._is_confirmed(publish):
                reply = publish.future.result()
                self.confirmed[reply.ids[0]] = publish.body
                self.stats.confirmed += 1
        self._publishes = waiting

    def _check_answered(self) -> None:
        """Every publish made to a process still running was answered (the cluster healed and settled)."""
        running = {id(node.host) for node in self._alive()}
        unanswered = [p.body for p in self._publishes if not p.future.done() and id(p.host) in running]
        if unanswered:
            raise LivenessViolation(f"seed {self.seed}: publishes never answered after healing: {unanswered}")

    @staticmethod
    def _is_confirmed(publish: _Publish) -> bool:
        future = publish.future
        return future.done() and future.exception() is None and isinstance(future.result(), Enqueued)

    def _members_caught_up(self, leader: SimNode) -> bool:
        raft = leader.running.groups[GROUP].raft
        conf = raft.status().conf
        commit = raft.status().commit
        return all(
            self.nodes[m].alive and self.nodes[m].applied >= commit for m in conf.voters + conf.learners
        )

    def _check_queues(self, leader: SimNode) -> None:
        """Nothing confirmed is lost: every member's queue holds every confirmed message and its body."""
        raft = leader.running.groups[GROUP].raft
        self.checker.check_nothing_lost(leader.name, raft.entry_term, raft.status().first_index - 1)
        conf = raft.status().conf
        for name in conf.voters + conf.learners:
            replica = self.nodes[name].replica
            assert replica is not None
            ready = {m.id for m in replica.machine.ready_messages()}
            for message_id, body in self.confirmed.items():
                stored = replica.bodies.get(message_id)
                if message_id not in ready or stored is None or stored.body != body:
                    raise InvariantViolation(
                        f"seed {self.seed}: confirmed message {message_id} ({body!r}) is missing on {name}"
                    )

    def _alive(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.alive]

    def _leaders(self) -> list[SimNode]:
        return [
            n for n in self._alive() if GROUP in n.running.groups and n.running.groups[GROUP].raft.is_leader
        ]

    def _some_leader(self) -> SimNode | None:
        leaders = self._leaders()
        return self.rng.choice(leaders) if leaders else None

    def _leader(self) -> SimNode | None:
        """The leader of the highest term (a removed node may campaign alone in higher terms)."""
        leaders = self._leaders()
        return max(leaders, key=lambda n: n.running.groups[GROUP].raft.term) if leaders else None

    def _check_leaders(self) -> None:
        for node in self._leaders():
            raft = node.running.groups[GROUP].raft
            if self.checker.check_new_leader(
                node.name, raft.term, raft.entry_term, raft.status().first_index - 1
            ):
                self.stats.leaders += 1


def run_seed(seed: int, steps: int) -> Simulation:
    """Run one seed (its shape, one voter with learners or three or five voters, drawn from it)."""
    shape = seed % 8
    voters, learners = (1, 2) if shape == 0 else (5, 0) if shape == 1 else (3, 0)
    simulation = Simulation(seed, voters=voters, learners=learners)
    simulation.run(steps)
    return simulation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="how many seeds to run")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=400, help="random actions per seed")
    args = parser.parse_args(argv)
    failures = 0
    totals = SimStats()
    trace = hashlib.sha256()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        try:
            simulation = run_seed(seed, args.steps)
        except Exception as exc:  # any crash of the node code is a failure of that seed too
            failures += 1
            print(f"seed {seed}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        trace.update(simulation.trace_digest.encode())
        names = ("leaders", "crashes", "power_losses", "slow_writes", "snapshots_installed", "conf_changes")
        for name in (*names, "confirmed"):
            setattr(totals, name, getattr(totals, name) + getattr(simulation.stats, name))
    print(
        f"{args.seeds} seeds x {args.steps} steps: {failures} failed; leaders {totals.leaders}, "
        f"crashes {totals.crashes}, power losses {totals.power_losses}, slow writes {totals.slow_writes}, "
        f"snapshots installed {totals.snapshots_installed}, conf changes {totals.conf_changes}, "
        f"publishes confirmed {totals.confirmed}; trace {trace.hexdigest()[:16]}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
