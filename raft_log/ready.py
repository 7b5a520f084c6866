"""What the core hands its driver: Ready batches and Status snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from raft_log.messages import Message
from raft_log.progress import ProgressState
from raft_log.types import ConfState, Entry, HardState, NodeId, Repair, Snapshot


class Role(Enum):
    """The role a node plays in its current term."""

    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre_candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"


@dataclass(frozen=True, slots=True)
class SoftState:
    """Volatile state worth reporting (never persisted)."""

    role: Role
    leader: NodeId | None


@dataclass(frozen=True, slots=True)
class ReadState:
    """A linearizable read may be served once the state machine has applied `index`."""

    context: bytes
    index: int


@dataclass(frozen=True, slots=True)
class Ready:
    """One batch of work for the driver, carried out in this order:

    1. persist `snapshot`, `entries`, `hard_state`, `conf_state` (synced);
    2. send `messages` -- only now, since they may acknowledge what step 1 made durable;
    3. apply `committed_entries` in order (a received `snapshot` first), serve `read_states`;
    4. call `advance(ready)`.
    """

    soft_state: SoftState | None = None
    hard_state: HardState | None = None
    conf_state: ConfState | None = None
    entries: tuple[Entry, ...] = ()
    snapshot: Snapshot | None = None
    messages: tuple[Message, ...] = ()
    committed_entries: tuple[Entry, ...] = ()
    read_states: tuple[ReadState, ...] = ()


class WritableStorage(Protocol):
    """The write side shared by MemoryStorage and the RocksDB storage."""

    def apply_snapshot(self, snapshot: Snapshot) -> None: ...
    def append(self, entries: Sequence[Entry]) -> None: ...
    def set_hard_state(self, hard_state: HardState) -> None: ...
    def set_conf_state(self, conf: ConfState) -> None: ...


def persist_ready(storage: WritableStorage, rd: Ready) -> None:
    """Step 1 of the driver loop: make the Ready's snapshot, entries, hard state and membership durable."""
    if rd.snapshot is not None:
        storage.apply_snapshot(rd.snapshot)
    if rd.entries:
        storage.append(rd.entries)
    if rd.hard_state is not None:
        storage.set_hard_state(rd.hard_state)
    if rd.conf_state is not None:
        storage.set_conf_state(rd.conf_state)


@dataclass(frozen=True, slots=True)
class PeerStatus:
    """The leader's view of one member's replication."""

    match: int
    next: int
    state: ProgressState
    recent_active: bool
    is_learner: bool
    repairing: bool = False  # it lost entries it acknowledged: counted for no commit until repaired


@dataclass(frozen=True, slots=True)
class Status:
    """A point-in-time description of a node, for operators and tests."""

    node_id: NodeId
    role: Role
    term: int
    leader: NodeId | None
    commit: int
    applied: int
    first_index: int
    last_index: int
    conf: ConfState
    progress: dict[NodeId, PeerStatus] = field(default_factory=dict)
    repair: Repair | None = None
