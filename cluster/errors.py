"""Errors the node raises to its callers (the HTTP layer maps each to a status code)."""

from __future__ import annotations


class NodeError(Exception):
    """Base class: `code` is the stable error code the API returns (the class's, unless one is given)."""

    code = "error"

    def __init__(self, reason: str, *, code: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        if code is not None:
            self.code = code


class QueueNotFound(NodeError):
    """No queue of that name is declared."""

    code = "not_found"


class NodeNotFound(NodeError):
    """No node of that name is a member of the cluster (or of the queue the request names)."""

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
    """The request is well-formed JSON but asks for something invalid (a queue command field it cannot
    take, a queue argument, a consumer name taken by a durable consumer: `code` says which)."""

    code = "bad_request"


class UnknownConsumer(NodeError):
    """The queue has no consumer of that name (`code` is the queue state's `unknown_consumer` when its
    log said so)."""

    code = "not_found"


class ConsumerEnded(UnknownConsumer):
    """The queue's leader ended the consumer; `code` says why (`consumer_timeout`, `consumer_idle`)."""


class Refused(NodeError):
    """The queue's state refused the command as things stand (`code` is the state machine's: e.g.
    `seq_too_old`, `queue_deleting`, `name_in_use`, `beyond_sequence`)."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason, code=code)


class TooLarge(NodeError):
    """The request would be replicated as an operation larger than a frame between nodes carries
    (`cluster.replication.proposals.MAX_OPERATION_BYTES`): it was not proposed."""

    code = "too_large"


class FormatsNotYetKnown(NodeError):
    """The request needs a format version every node of the cluster reads, and whether one reads it is
    not known yet: it has not said what it reads since it linked with this node (or since this node
    started). Retry after `retry_after_s` (docs/decisions/0018-format-announcements-per-link.md)."""

    code = "formats_not_yet_known"
    retry_after_s = 1


class ResourceAlarmed(NodeError):
    """A publish to a queue with a replica on a node in a resource alarm (its free disk below its
    `disk_free_limit`, or its memory above its `vm_memory_high_watermark`): nothing was enqueued; retry
    after `retry_after_s`, once consumers drained or space was freed."""

    code = "resource_alarm"
    retry_after_s = 5

    def __init__(self, node: str, resource: str) -> None:
        super().__init__(
            f"node {node} is in a {resource} alarm: publishes to its queues wait until it clears"
        )
        self.node = node
        self.resource = resource


class Overloaded(NodeError):
    """A publish to a queue whose leader holds as many proposals not yet applied as it takes
    (`max_unapplied_proposals`, `max_unapplied_proposal_bytes`): nothing was enqueued; retry after
    `retry_after_s`, once the group has caught up."""

    code = "overloaded"
    retry_after_s = 1

    def __init__(self, queue: str) -> None:
        super().__init__(
            f"queue '{queue}' has as many publishes waiting for its replicas as its leader takes: retry"
            " shortly"
        )
        self.queue = queue


class QueueFull(NodeError):
    """The queue is at its length limit and its overflow rule is reject-publish: nothing was enqueued."""

    code = "reject-publish"


class LogGap(NodeError):
    """Part of a durable consumer's log range is settled, returned or not handed out yet (or its body is
    gone): it cannot be read again unchanged."""

    code = "log_gap"
