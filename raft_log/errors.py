"""Errors the consensus core raises to its caller (never swallowed, never silent)."""

from __future__ import annotations

from raft_log.types import NodeId


class RaftError(Exception):
    """Base class of every error the core raises on purpose."""


class NotLeaderError(RaftError):
    """This node is not the leader; `leader_hint` names the leader it knows of, if any."""

    def __init__(self, leader_hint: NodeId | None) -> None:
        super().__init__(f"not the leader (leader hint: {leader_hint})")
        self.leader_hint = leader_hint


class ProposalDroppedError(RaftError):
    """The leader refuses proposals while it hands leadership over to another node."""


class ConfChangeInProgressError(RaftError):
    """A membership change is still uncommitted, or the leader has not committed in its term yet."""


class InvalidConfChangeError(RaftError):
    """The membership change does not fit the current configuration."""


class MessageDecodeError(RaftError):
    """Bytes from the network are not a well-formed Raft message."""
