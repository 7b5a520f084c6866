"""Three RaftHosts hosting one queue group over real RocksDB stores, stepped by the test.

Nothing runs on its own: a round, a tick or a frame's delivery happens only when the test asks for it,
so a test can depose a leader, partition it, let the others move on and compact, and heal, in a known
order. The network is the driver simulation's (`cluster.testing.simulated_network`), which carries the real
frames and can be partitioned; each round is the production one (`begin_round`, the write, `end_round`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from cluster.queues.queue_replica import QueueReplica
from cluster.replication.entry_codec import encode_queue_op
from cluster.replication.raft_host import Group, RaftHost
from cluster.replication.stored_message import StoredMessage
from cluster.testing.simulated_network import SimulatedNetwork
from queue_state.arguments import QueueConfig
from queue_state.commands import Enqueue, EntryMeta, NewMessage
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState

NAMES = ("a", "b", "c")
GROUP = "q-stepped"


def _fatal(what: str) -> NoReturn:
    raise AssertionError(f"fatal: {what}")


def publish_op(body: bytes, now_ms: int = 1) -> list[Any]:
    """A queue operation enqueuing one message with `body`."""
    command = Enqueue(messages=(NewMessage(len(body)),))
    return encode_queue_op(EntryMeta(now_ms), command, [StoredMessage(body, {}, "utf8")])


class SteppedCluster:
    """Nodes a, b and c, voters of GROUP; `snapshot_every` entries between local snapshots. `replicas`
    gives a node's replica another class (one that reads what this version does not, say)."""

    tick_ms = 10
    election_ticks = 10
    heartbeat_ticks = 1

    def __init__(
        self,
        path: Path,
        snapshot_every: int = 1000,
        replicas: Mapping[str, type[QueueReplica]] | None = None,
    ) -> None:
        self.path = path
        self.snapshot_every = snapshot_every
        self.replica_classes = replicas or {}
        self.network = SimulatedNetwork()
        self.stores: dict[str, NodeStore] = {}
        self.hosts: dict[str, RaftHost] = {}
        self.replicas: dict[str, QueueReplica] = {}
        for name in NAMES:
            self.network.add(name)
            store = NodeStore.open(path / name)
            store.create_group(GROUP, ConfState(voters=NAMES))
            store.commit(sync=True)
            self._start(name, store)

    def _start(self, name: str, store: NodeStore) -> None:
        self.network.incarnations[name] = store.incarnation
        host = RaftHost(
            name,
            store,
            self.network.transport(name),
            tick_ms=self.tick_ms,
            election_ticks=self.election_ticks,
            heartbeat_ticks=self.heartbeat_ticks,
            snapshot_every=self.snapshot_every,
            batch_delay_ms=0,
            rng=random.Random(name),
            on_fatal=_fatal,
        )
        replica = self.replica_classes.get(name, QueueReplica)("q", GROUP, QueueConfig(), store.group(GROUP))
        host.open_group(GROUP, replica)
        self.stores[name], self.hosts[name], self.replicas[name] = store, host, replica

    def restart(self, name: str) -> None:
        """Node `name` stops (everything it wrote is durable) and starts again on its store."""
        self.stores[name].commit(sync=True)
        self.stores[name].close()
        self._start(name, NodeStore.open(self.path / name))

    def close(self) -> None:
        for store in self.stores.values():
            store.close()

    def group(self, name: str) -> Group:
        return self.hosts[name].groups[GROUP]

    def settle(self, among: tuple[str, ...] = NAMES) -> None:
        """Run rounds of the nodes `among` and deliver every frame until nothing is left to do (frames to
        or from the others are dropped: they are cut off)."""
        for _ in range(10_000):
            busy = [name for name in among if self.hosts[name].has_work()]
            if not busy and not self.network.in_flight:
                return
            for name in busy:
                self.round(name)
            while self.network.in_flight:
                frame = self.network.in_flight.pop(0)
                if frame.to in among and frame.frm in among:
                    self.hosts[frame.to].on_frame(frame.frm, frame.kind, frame.body)
        raise AssertionError("the cluster never went quiet")

    def round(self, name: str) -> None:
        """One production round of node `name`, its write done at once."""
        host, store = self.hosts[name], self.stores[name]
        round_ = host.begin_round()
        if round_ is None:
            return
        if round_.taken is not None:
            store.write_taken(round_.taken, round_.sync)
            store.finish(round_.taken)
        host.end_round(round_)

    def until(self, condition: Callable[[], bool], among: tuple[str, ...] = NAMES, ticks: int = 500) -> None:
        """Tick the nodes `among` and settle them until `condition` holds."""
        for _ in range(ticks):
            self.settle(among)
            if condition():
                return
            for name in among:
                self.hosts[name].tick()
        raise AssertionError("the condition never held")

    @classmethod
    def quiet(cls, path: Path) -> SteppedCluster:
        """A cluster whose group `a` leads, gone quiet on every member."""
        cluster = cls(path)
        cluster.elect("a")
        cluster.until(lambda: all(cluster.group(name).raft.quiet for name in NAMES))
        return cluster

    def elect(self, name: str, among: tuple[str, ...] = NAMES) -> None:
        """Make `name` campaign and wait until it leads, with the others `among` following it."""
        self.hosts[name].campaign(GROUP)
        self.until(lambda: self.group(name).raft.is_leader and self.group(name).applied > 0, among)
