"""Raft's safety properties as a checker fed with what a cluster does (used by the simulation).

Each `observe_*` call records one event and raises `InvariantViolation` as soon as the history breaks
a property: election safety, log matching, state machine safety, leader completeness, and the
quorumq promise that nothing acknowledged as committed is ever lost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from raft_log.types import Entry, NodeId


class InvariantViolation(AssertionError):
    """A Raft safety property does not hold in the observed history."""


class LivenessViolation(AssertionError):
    """After healing every fault, the group did not elect a leader that commits (or members stayed behind)."""


def chain_digest(digest: bytes, entry: Entry) -> bytes:
    """The digest of a state after applying `entry` to a state of digest `digest` (a simulation's stand-in
    for the application state)."""
    return hashlib.sha256(
        digest + f"{entry.index}/{entry.term}/{int(entry.kind)}/".encode() + entry.data
    ).digest()


@dataclass(frozen=True, slots=True)
class CommittedEntry:
    """An entry some node applied, and the term that node was in when it did."""

    entry: Entry
    observed_in_term: int


class SafetyChecker:
    """Accumulates a cluster's history and checks every invariant on each new event."""

    def __init__(self) -> None:
        self.leader_of_term: dict[int, NodeId] = {}
        self._previous_term_of: dict[tuple[int, int], int] = {}
        self._content_of: dict[tuple[int, int], tuple[int, bytes]] = {}
        self.committed: dict[int, CommittedEntry] = {}
        self._digest_at: dict[int, bytes] = {}
        self._leaders_checked: set[tuple[NodeId, int]] = set()

    def observe_leader(self, node: NodeId, term: int) -> None:
        """Election safety: at most one leader per term."""
        holder = self.leader_of_term.setdefault(term, node)
        if holder != node:
            raise InvariantViolation(f"two leaders in term {term}: {holder} and {node}")

    def observe_persisted(self, node: NodeId, entry: Entry, previous_term: int) -> None:
        """Log matching: an (index, term) pair always holds the same entry after the same history."""
        key = (entry.index, entry.term)
        seen_previous = self._previous_term_of.setdefault(key, previous_term)
        if seen_previous != previous_term:
            raise InvariantViolation(
                f"log matching: {node} holds {key} after term {previous_term}, "
                f"another log after {seen_previous}"
            )
        content = (int(entry.kind), entry.data)
        if self._content_of.setdefault(key, content) != content:
            raise InvariantViolation(f"log matching: {node} holds different data at {key}")

    def observe_applied(self, node: NodeId, entry: Entry, node_term: int, digest: bytes) -> None:
        """State machine safety: every node applies the same entry at each index."""
        known = self.committed.get(entry.index)
        if known is None:
            self.committed[entry.index] = CommittedEntry(entry, node_term)
        elif known.entry != entry:
            raise InvariantViolation(
                f"state machine safety: {node} applied {entry} at {entry.index}, others {known.entry}"
            )
        self.observe_state(node, entry.index, digest)

    def observe_state(self, node: NodeId, index: int, digest: bytes) -> None:
        """The application state after `index` (applied or from a snapshot) is the same everywhere."""
        if self._digest_at.setdefault(index, digest) != digest:
            raise InvariantViolation(f"state machine safety: {node} has a different state at {index}")

    def digest_at(self, index: int) -> bytes:
        """The application state's digest after `index`, as first observed (to carry on from a snapshot)."""
        return self._digest_at[index]

    def check_new_leader(
        self, node: NodeId, term: int, term_at: Callable[[int], int | None], compacted_through: int
    ) -> bool:
        """Election safety and leader completeness, once per (node, term); True when the leader is new."""
        if (node, term) in self._leaders_checked:
            return False
        self._leaders_checked.add((node, term))
        self.observe_leader(node, term)
        self.check_leader_completeness(node, term, term_at, compacted_through)
        return True

    def check_leader_completeness(
        self, node: NodeId, term: int, term_at: Callable[[int], int | None], compacted_through: int
    ) -> None:
        """A leader of `term` holds every entry committed in an earlier term."""
        earlier = [c for c in self.committed.values() if c.observed_in_term < term]
        self._check_holds(
            node, earlier, term_at, compacted_through, f"leader completeness ({node}, term {term})"
        )

    def check_nothing_lost(
        self, node: NodeId, term_at: Callable[[int], int | None], compacted_through: int
    ) -> None:
        """After the cluster healed, its leader holds every entry ever applied anywhere."""
        self._check_holds(
            node, list(self.committed.values()), term_at, compacted_through, "committed entry lost"
        )

    @staticmethod
    def _check_holds(
        node: NodeId,
        committed: list[CommittedEntry],
        term_at: Callable[[int], int | None],
        compacted_through: int,
        rule: str,
    ) -> None:
        for item in committed:
            entry = item.entry
            if entry.index > compacted_through and term_at(entry.index) != entry.term:
                raise InvariantViolation(f"{rule}: {node} lacks committed {entry}")
