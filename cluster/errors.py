"""Errors the node raises to its callers (the HTTP layer maps each to a status code)."""

from __future__ import annotations


class NodeError(Exception):
    """Base class: `code` is the stable error code the API returns."""

    code = "error"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class QueueNotFound(NodeError):
    """No queue of that name is declared."""

    code = "not_found"


class QueueConflict(NodeError):
    """A queue of that name exists with other arguments, or is in use/not empty on a guarded delete."""

    code = "conflict"


class NotLeader(NodeError):
    """This node cannot serve the request; `leader` names the node that can, when known."""

    code = "no_leader"

    def __init__(self, reason: str, leader: str | None = None) -> None:
        super().__init__(reason)
        self.leader = leader


class OutcomeUnknown(NotLeader):
    """The request was sent on (to the leader, or into the Raft log) and lost track of: it may have taken
    effect, so only a request safe to repeat may be retried."""

    code = "outcome_unknown"


class BadRequest(NodeError):
    """The request is well-formed JSON but asks for something invalid."""

    code = "bad_request"
