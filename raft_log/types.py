"""Plain data shared by the consensus core, its storage and the node that drives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol

NodeId = str
GroupId = str


class EntryKind(IntEnum):
    """What an entry's payload is: application data or a membership change."""

    NORMAL = 0
    CONF_CHANGE = 1


@dataclass(frozen=True, slots=True)
class Entry:
    """One log entry. An empty NORMAL entry is the no-op a new leader appends."""

    index: int
    term: int
    kind: EntryKind = EntryKind.NORMAL
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class HardState:
    """What must be durable before a vote or an append is acknowledged."""

    term: int = 0
    vote: NodeId | None = None
    commit: int = 0


UNKNOWN_VOTE: NodeId = ""
"""The vote of a hard state rebuilt after damage: the vote in that term is unknown, so none is granted."""


@dataclass(frozen=True, slots=True)
class Repair:
    """Why a replica may have lost entries (or its vote) it acknowledged, and what it must get back.

    Until it holds entries through `through` (the highest index it may have acknowledged) and a leader's
    commit covers them, it neither votes nor campaigns and its leader does not count it towards a commit.
    """

    reason: str
    index: int | None  # where the damage was found (None: a metadata record)
    through: int
    conf_through: int = 0  # the stored membership already holds the changes up to here (the old commit)


@dataclass(frozen=True, slots=True)
class ConfState:
    """A group's membership: voters decide, learners only receive the log.

    `incarnations` pairs members with the incarnation (node database) their replica belongs to, sorted
    by member; a member without a pair has an unknown incarnation (added before incarnations existed).
    """

    voters: tuple[NodeId, ...] = ()
    learners: tuple[NodeId, ...] = ()
    incarnations: tuple[tuple[NodeId, str], ...] = ()

    def incarnation_of(self, node: NodeId) -> str | None:
        """The incarnation recorded for `node`, None when unknown."""
        for member, incarnation in self.incarnations:
            if member == node:
                return incarnation
        return None


def conf_fields(conf: ConfState) -> list[Any]:
    """The fields a membership is stored and sent as: `voters, learners`, plus `[[member, incarnation],
    ...]` when any incarnation is known (so a membership without any reads back on a version without
    them)."""
    fields: list[Any] = [list(conf.voters), list(conf.learners)]
    if conf.incarnations:
        fields.append([list(pair) for pair in conf.incarnations])
    return fields


@dataclass(frozen=True, slots=True)
class SnapshotMeta:
    """Where a snapshot stands in the log and the membership in force there."""

    index: int = 0
    term: int = 0
    conf: ConfState = field(default_factory=ConfState)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Application state as of `meta.index` (opaque bytes to the consensus core)."""

    meta: SnapshotMeta = field(default_factory=SnapshotMeta)
    data: bytes = b""


class LogStorage(Protocol):
    """The stable log of one group as the consensus core reads it.

    Indexes `first_index() .. last_index()` are readable; `term()` also answers for
    `first_index() - 1` (the snapshot's index). The driver writes to it; the core only reads.
    """

    def initial_state(self) -> tuple[HardState, ConfState]:
        """The hard state and membership to start from (after a restart, the persisted ones)."""
        ...

    def first_index(self) -> int:
        """The first index still held as an entry (snapshot index + 1)."""
        ...

    def last_index(self) -> int:
        """The last index held (the snapshot index when no entry follows it)."""
        ...

    def term(self, index: int) -> int:
        """The term of the entry at `index`; raises `CompactedError` or `UnavailableError`."""
        ...

    def entries(self, lo: int, hi: int, max_bytes: int | None = None) -> list[Entry]:
        """Entries `lo <= index < hi`, at least one, stopping once `max_bytes` of data is reached."""
        ...

    def snapshot(self) -> Snapshot:
        """The latest snapshot (index 0 and empty data when none was taken)."""
        ...


class StorageError(Exception):
    """Base class of storage failures the core understands."""


class CompactedError(StorageError):
    """The requested index was compacted away into a snapshot."""


class UnavailableError(StorageError):
    """The requested index is beyond the last stored entry."""
