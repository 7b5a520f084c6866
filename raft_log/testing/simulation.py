"""Deterministic simulation of a Raft group under faults: one seed replays a whole run exactly.

N nodes (RaftNode + MemoryStorage + a digest state machine) talk through a simulated network that
drops, duplicates, reorders and partitions. Nodes crash (losing everything not yet persisted, since
the driver persists a Ready before sending it), restart, take snapshots and compact; the leader is
asked for proposals, membership changes, leadership transfers and reads. `SafetyChecker` checks
every event; the run ends by healing everything and requiring a leader that commits.

    python -m raft_log.testing.simulation --seeds 1000 --steps 400
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
from dataclasses import dataclass, field

from raft_log.confchange import apply_conf_change, decode_conf_change, random_conf_change
from raft_log.core import Config, RaftNode
from raft_log.errors import RaftError
from raft_log.messages import Message, decode_message, encode_message
from raft_log.ready import Ready, persist_ready
from raft_log.storage.memory_storage import MemoryStorage
from raft_log.testing.invariants import InvariantViolation, LivenessViolation, SafetyChecker, chain_digest
from raft_log.types import ConfState, Entry, EntryKind, NodeId, Snapshot

GROUP = "sim"
EMPTY_DIGEST = bytes(32)


@dataclass(frozen=True, slots=True)
class FaultRates:
    """How hostile a run is: per-delivery network faults and per-step action weights."""

    drop: float = 0.05
    duplicate: float = 0.03
    reorder_window: int = 6
    crash_mid_ready: float = 0.01
    weights: tuple[tuple[str, int], ...] = (
        ("deliver", 40),
        ("ready", 30),
        ("tick", 12),
        ("propose", 8),
        ("read", 2),
        ("crash", 1),
        ("restart", 2),
        ("partition", 1),
        ("heal", 2),
        ("membership", 1),
        ("transfer", 1),
        ("snapshot", 2),
    )


PERFECT_NETWORK = FaultRates(drop=0.0, duplicate=0.0, reorder_window=1, crash_mid_ready=0.0)


@dataclass(slots=True)
class SimNode:
    """One replica: durable storage survives a crash, the core and the applied state do not."""

    node_id: NodeId
    storage: MemoryStorage
    raft: RaftNode | None = None
    applied: int = 0
    digest: bytes = EMPTY_DIGEST
    conf: ConfState = field(default_factory=ConfState)

    @property
    def alive(self) -> bool:
        return self.raft is not None

    @property
    def core(self) -> RaftNode:
        """The running core (a crashed replica has none)."""
        if self.raft is None:
            raise RuntimeError(f"replica {self.node_id} is down")
        return self.raft


@dataclass(slots=True)
class SimStats:
    """What a run did, for the CLI and the benchmark."""

    steps: int = 0
    leaders: int = 0
    crashes: int = 0
    snapshots_installed: int = 0
    conf_changes: int = 0
    committed: int = 0


class Simulation:
    """A seeded cluster run; `run(steps)` raises InvariantViolation or LivenessViolation on failure."""

    def __init__(
        self,
        seed: int,
        voters: int = 3,
        faults: FaultRates | None = None,
        pre_vote: bool | None = None,
        check_quorum: bool | None = None,
        max_snapshot_chunk: int = 16,
        max_size_per_msg: int = 64,
        max_inflight_msgs: int = 4,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = faults if faults is not None else FaultRates()
        self.pre_vote = self.rng.random() < 0.8 if pre_vote is None else pre_vote
        self.check_quorum = self.rng.random() < 0.8 if check_quorum is None else check_quorum
        self.max_snapshot_chunk = max_snapshot_chunk
        self.max_size_per_msg = max_size_per_msg
        self.max_inflight_msgs = max_inflight_msgs
        self.checker = SafetyChecker()
        self.stats = SimStats()
        self.network: list[Message] = []
        self.side: dict[NodeId, int] = {}
        self.nodes: dict[NodeId, SimNode] = {}
        self._next_node = 1
        self._proposals = 0
        self._reads: dict[bytes, int] = {}
        bootstrap = ConfState(voters=tuple(f"n{i}" for i in range(1, voters + 1)))
        for _ in range(voters):
            self._add_node(MemoryStorage(bootstrap))
        self._actions = [name for name, _ in self.faults.weights]
        self._weights = [weight for _, weight in self.faults.weights]

    # ------------------------------------------------------------------ running

    def run(self, steps: int) -> SimStats:
        """`steps` random actions with checks after each, then heal and require liveness."""
        for _ in range(steps):
            self.step()
        self.heal_and_check_liveness()
        return self.stats

    def step(self) -> None:
        """One random action, then the per-step checks."""
        action = self.rng.choices(self._actions, self._weights)[0]
        getattr(self, f"_do_{action}")()
        self.stats.steps += 1
        self._check_leaders()

    def heal_and_check_liveness(self, max_rounds: int = 400) -> None:
        """Heal partitions, restart every node, then a leader must commit and every member catch up."""
        self.side = {}
        self.faults = PERFECT_NETWORK
        for node in self.nodes.values():
            if not node.alive:
                self._restart(node)
        marker: bytes | None = None
        proposed_to: tuple[NodeId, int] | None = None
        for _ in range(max_rounds):
            for node in self._alive():
                node.core.tick()
            self._settle()
            self._check_leaders()
            leader = self._current_leader()
            if leader is None:
                continue
            if proposed_to != (leader.node_id, leader.core.term):
                try:
                    marker = self._propose(leader)
                except RaftError:
                    continue
                proposed_to = (leader.node_id, leader.core.term)
            if marker is not None and self._everyone_applied(leader, marker):
                status = leader.core.status()
                self.checker.check_nothing_lost(
                    leader.node_id, leader.core.entry_term, status.first_index - 1
                )
                return
        raise LivenessViolation(f"seed {self.seed}: no leader committed after healing ({max_rounds} rounds)")

    def _settle(self, max_iterations: int = 10_000) -> None:
        """Deliver every message and process every Ready until the cluster is quiet."""
        for _ in range(max_iterations):
            busy = [n for n in self._alive() if n.core.has_ready()]
            if not busy and not self.network:
                return
            for node in busy:
                self._process_ready(node)
            while self.network:
                self._deliver(self.network.pop(0))
        raise LivenessViolation(f"seed {self.seed}: the cluster never went quiet")

    def _current_leader(self) -> SimNode | None:
        """The leader of the highest term (a removed node may campaign alone in higher terms)."""
        leaders = [n for n in self._alive() if n.core.is_leader]
        return max(leaders, key=lambda n: n.core.term) if leaders else None

    def _everyone_applied(self, leader: SimNode, marker: bytes) -> bool:
        index = next(
            (i for i, c in self.checker.committed.items() if c.entry.data == marker),
            None,
        )
        if index is None:
            return False
        conf = leader.core.status().conf
        return all(self.nodes[m].applied >= index for m in conf.voters + conf.learners)

    # ------------------------------------------------------------------ actions

    def _do_deliver(self) -> None:
        if not self.network:
            return
        position = self.rng.randrange(min(len(self.network), self.faults.reorder_window))
        msg = self.network.pop(position)
        if self.rng.random() < self.faults.drop:
            return
        if self.rng.random() < self.faults.duplicate:
            self.network.insert(self.rng.randrange(len(self.network) + 1), msg)
        self._deliver(msg)

    def _do_ready(self) -> None:
        busy = [n for n in self._alive() if n.core.has_ready()]
        if busy:
            self._process_ready(self.rng.choice(busy))

    def _do_tick(self) -> None:
        alive = self._alive()
        if self.rng.random() < 0.2 and alive:
            self.rng.choice(alive).core.tick()  # one clock runs ahead
            return
        for node in alive:
            node.core.tick()

    def _do_propose(self) -> None:
        leader = self._some_leader()
        if leader is not None:
            with contextlib.suppress(RaftError):
                self._propose(leader)

    def _do_read(self) -> None:
        alive = self._alive()
        if not alive:
            return
        node = self.rng.choice(alive)
        context = f"read-{self.stats.steps}".encode()
        try:
            node.core.read_index(context)
        except RaftError:
            return
        self._reads[context] = max(self.checker.committed, default=0)

    def _do_crash(self) -> None:
        alive = self._alive()
        if alive:
            self._crash(self.rng.choice(alive))

    def _do_restart(self) -> None:
        down = [n for n in self.nodes.values() if not n.alive]
        if down:
            self._restart(self.rng.choice(down))

    def _do_partition(self) -> None:
        self.side = {node: self.rng.randrange(2) for node in self.nodes}

    def _do_heal(self) -> None:
        self.side = {}

    def _do_membership(self) -> None:
        leader = self._some_leader()
        if leader is None:
            return
        status = leader.core.status()
        conf = status.conf
        room = len(conf.voters + conf.learners) < 5 and self._next_node <= 8
        holding = [member for member, peer in status.progress.items() if peer.match]
        change = random_conf_change(self.rng, conf, f"n{self._next_node}" if room else None, holding)
        try:
            leader.core.propose_conf_change(change)
        except RaftError:
            return
        self.stats.conf_changes += 1
        if change.node not in self.nodes:
            self._add_node(MemoryStorage())

    def _do_transfer(self) -> None:
        leader = self._some_leader()
        if leader is None:
            return
        voters = [v for v in leader.core.status().conf.voters if v != leader.node_id]
        if voters:
            leader.core.transfer_leadership(self.rng.choice(voters))

    def _do_snapshot(self) -> None:
        candidates = [n for n in self._alive() if n.applied > n.storage.snapshot().meta.index]
        if not candidates:
            return
        node = self.rng.choice(candidates)
        padding = self.rng.randbytes(self.rng.randrange(100))
        node.storage.create_snapshot(node.applied, node.conf, node.digest + padding)
        node.storage.compact(max(node.storage.first_index() - 1, node.applied - self.rng.randrange(6)))

    # ------------------------------------------------------------------ the driver

    def _process_ready(self, node: SimNode) -> None:
        """The driver contract: persist, then send, then apply, then advance."""
        raft = node.core
        rd: Ready = raft.ready()
        storage = node.storage
        persist_ready(storage, rd)
        for entry in rd.entries:
            self.checker.observe_persisted(node.node_id, entry, storage.term(entry.index - 1))
        if self.rng.random() < self.faults.crash_mid_ready:
            self._crash(node)  # persisted, but nothing sent or applied
            return
        self.network.extend(rd.messages)
        if rd.snapshot is not None:
            self._install(node, rd.snapshot)
            self.stats.snapshots_installed += 1
        for entry in rd.committed_entries:
            self._apply(node, entry, raft.term)
        for read in rd.read_states:
            floor = self._reads.pop(read.context, None)
            if floor is not None and read.index < floor:
                raise InvariantViolation(
                    f"linearizable read: {node.node_id} answered {read.context!r} at {read.index}, "
                    f"but {floor} was committed before the read began"
                )
        raft.advance(rd)

    def _apply(self, node: SimNode, entry: Entry, term: int) -> None:
        if entry.index != node.applied + 1:
            raise InvariantViolation(f"{node.node_id} applied {entry.index} after {node.applied}")
        node.digest = chain_digest(node.digest, entry)
        node.applied = entry.index
        if entry.kind is EntryKind.CONF_CHANGE:
            node.conf = apply_conf_change(node.conf, decode_conf_change(entry.data))
        self.checker.observe_applied(node.node_id, entry, term, node.digest)
        self.stats.committed = max(self.stats.committed, entry.index)

    def _install(self, node: SimNode, snapshot: Snapshot) -> None:
        node.applied = snapshot.meta.index
        node.digest = snapshot.data[:32] if snapshot.meta.index else EMPTY_DIGEST
        node.conf = snapshot.meta.conf
        self.checker.observe_state(node.node_id, node.applied, node.digest)

    def _deliver(self, msg: Message) -> None:
        target = self.nodes.get(msg.to)
        if target is None or not target.alive:
            return
        if self.side.get(msg.frm, 0) != self.side.get(msg.to, 0):
            return
        target.core.step(decode_message(encode_message(msg)))

    # ------------------------------------------------------------------ helpers

    def _add_node(self, storage: MemoryStorage) -> None:
        node = SimNode(f"n{self._next_node}", storage)
        self._next_node += 1
        self.nodes[node.node_id] = node
        self._restart(node)

    def _crash(self, node: SimNode) -> None:
        node.raft = None
        self.stats.crashes += 1

    def _restart(self, node: SimNode) -> None:
        snapshot = node.storage.snapshot()
        self._install(node, snapshot)
        config = Config(
            node_id=node.node_id,
            group=GROUP,
            election_tick=10,
            heartbeat_tick=1,
            max_size_per_msg=self.max_size_per_msg,
            max_inflight_msgs=self.max_inflight_msgs,
            pre_vote=self.pre_vote,
            check_quorum=self.check_quorum,
            applied=snapshot.meta.index,
            max_snapshot_chunk=self.max_snapshot_chunk,
        )
        node.raft = RaftNode(config, node.storage, random.Random(self.rng.getrandbits(64)))

    def _propose(self, leader: SimNode) -> bytes:
        self._proposals += 1
        data = f"p{self._proposals}".encode()
        leader.core.propose(data)
        return data

    def _alive(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.alive]

    def _some_leader(self) -> SimNode | None:
        leaders = [n for n in self._alive() if n.core.is_leader]
        return self.rng.choice(leaders) if leaders else None

    def _check_leaders(self) -> None:
        for node in self._alive():
            raft = node.core
            if raft.is_leader and self.checker.check_new_leader(
                node.node_id, raft.term, raft.entry_term, raft.status().first_index - 1
            ):
                self.stats.leaders += 1


def run_seed(seed: int, steps: int, voters: int = 3) -> SimStats:
    """Run one seed; raises on any safety or liveness violation."""
    return Simulation(seed, voters=voters).run(steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="how many seeds to run")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=400, help="random actions per seed")
    parser.add_argument("--voters", type=int, default=3, help="voters the group is bootstrapped with")
    args = parser.parse_args(argv)
    failures = 0
    totals = SimStats()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        try:
            stats = run_seed(seed, args.steps, args.voters)
        except Exception as exc:  # any crash of the core is a failure of that seed too
            failures += 1
            print(f"seed {seed}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        totals.leaders += stats.leaders
        totals.crashes += stats.crashes
        totals.snapshots_installed += stats.snapshots_installed
        totals.conf_changes += stats.conf_changes
        totals.committed += stats.committed
    print(
        f"{args.seeds} seeds x {args.steps} steps: {failures} failed; leaders {totals.leaders}, "
        f"crashes {totals.crashes}, snapshots installed {totals.snapshots_installed}, "
        f"conf changes {totals.conf_changes}, entries committed {totals.committed}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
