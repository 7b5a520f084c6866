"""Majority arithmetic over a set of voters: commit index and election outcome."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from enum import Enum

from raft_log.types import NodeId


class VoteResult(Enum):
    """Outcome of an election so far."""

    PENDING = "pending"
    WON = "won"
    LOST = "lost"


def majority(voter_count: int) -> int:
    """How many voters make a majority."""
    return voter_count // 2 + 1


def committed_index(voters: Collection[NodeId], match: Mapping[NodeId, int]) -> int:
    """The highest index a majority of `voters` have in their logs (0 with no voters)."""
    if not voters:
        return 0
    matched = sorted((match.get(voter, 0) for voter in voters), reverse=True)
    return matched[majority(len(voters)) - 1]


def vote_result(voters: Collection[NodeId], votes: Mapping[NodeId, bool]) -> VoteResult:
    """WON once a majority granted, LOST once a majority can no longer be reached."""
    granted = sum(1 for voter in voters if votes.get(voter) is True)
    missing = sum(1 for voter in voters if voter not in votes)
    needed = majority(len(voters))
    if granted >= needed:
        return VoteResult.WON
    if granted + missing >= needed:
        return VoteResult.PENDING
    return VoteResult.LOST


def has_quorum(voters: Collection[NodeId], members: Collection[NodeId]) -> bool:
    """Whether `members` include a majority of `voters`."""
    present = set(members)
    return sum(1 for voter in voters if voter in present) >= majority(len(voters))
