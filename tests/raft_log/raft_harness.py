"""A small deterministic cluster for unit tests: real RaftNodes, MemoryStorage, a lossless network."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from raft_log.core import Config, RaftNode
from raft_log.messages import Message, MessageType, decode_message, encode_message
from raft_log.ready import ReadState, persist_ready
from raft_log.storage.memory_storage import MemoryStorage
from raft_log.types import ConfState, Entry, NodeId, Repair

MessageFilter = Callable[[Message], bool]


class Harness:
    """Nodes driven by the documented loop (persist, send, apply, advance); messages queue in `outbox`."""

    def __init__(
        self,
        voters: Iterable[NodeId] = ("a", "b", "c"),
        learners: Iterable[NodeId] = (),
        seed: int = 0,
        **config: object,
    ) -> None:
        self.conf = ConfState(voters=tuple(voters), learners=tuple(learners))
        self.config = config
        self.rng = random.Random(seed)
        self.nodes: dict[NodeId, RaftNode] = {}
        self.storages: dict[NodeId, MemoryStorage] = {}
        self.applied: dict[NodeId, list[Entry]] = {}
        self.read_states: dict[NodeId, list[ReadState]] = {}
        self.outbox: list[Message] = []
        self.isolated: set[NodeId] = set()
        self.dropped: list[MessageFilter] = []
        for node in self.conf.voters + self.conf.learners:
            self.add(node, MemoryStorage(self.conf))

    def add(
        self, node: NodeId, storage: MemoryStorage, applied: int = 0, repair: Repair | None = None
    ) -> RaftNode:
        """Start (or restart) `node` on `storage` (repairing when `repair` is given)."""
        cfg = Config(node_id=node, group="g", applied=applied, **self.config)  # type: ignore[arg-type]
        self.nodes[node] = RaftNode(cfg, storage, random.Random(self.rng.getrandbits(32)), repair)
        self.storages[node] = storage
        self.applied.setdefault(node, [])
        self.read_states.setdefault(node, [])
        return self.nodes[node]

    def __getitem__(self, node: NodeId) -> RaftNode:
        return self.nodes[node]

    def process(self, node: NodeId) -> list[Message]:
        """Run one Ready of `node` through the driver contract; its messages go to `outbox`."""
        raft, storage = self.nodes[node], self.storages[node]
        if not raft.has_ready():
            return []
        rd = raft.ready()
        persist_ready(storage, rd)
        self.outbox.extend(rd.messages)
        self.applied[node].extend(rd.committed_entries)
        self.read_states[node].extend(rd.read_states)
        raft.advance(rd)
        return list(rd.messages)

    def take(self, kind: MessageType | None = None) -> list[Message]:
        """Process every node and remove the queued messages (of `kind`, if given) from `outbox`."""
        for node in list(self.nodes):
            self.process(node)
        taken = [m for m in self.outbox if kind is None or m.type is kind]
        self.outbox = [m for m in self.outbox if m not in taken]
        return taken

    def deliver(self, msg: Message) -> None:
        """Hand one message to its recipient (through the wire format)."""
        if msg.frm in self.isolated or msg.to in self.isolated or msg.to not in self.nodes:
            return
        if any(rule(msg) for rule in self.dropped):
            return
        self.nodes[msg.to].step(decode_message(encode_message(msg)))

    def stabilize(self, max_rounds: int = 1000) -> None:
        """Process and deliver until no node has work and no message is queued."""
        for _ in range(max_rounds):
            for node in list(self.nodes):
                self.process(node)
            if not self.outbox:
                return
            pending, self.outbox = self.outbox, []
            for msg in pending:
                self.deliver(msg)
        raise AssertionError("cluster did not stabilize")

    def tick_all(self, ticks: int = 1) -> None:
        for _ in range(ticks):
            for node in self.nodes:
                self.nodes[node].tick()
            self.stabilize()

    def elect(self, node: NodeId) -> RaftNode:
        """Make `node` leader and settle."""
        self.nodes[node].campaign()
        self.stabilize()
        assert self.nodes[node].is_leader
        return self.nodes[node]

    def data_applied(self, node: NodeId) -> list[bytes]:
        """Payloads `node` applied, without the leaders' empty no-ops."""
        return [e.data for e in self.applied[node] if e.data]
