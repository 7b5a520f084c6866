"""ReadIndex requests waiting for a heartbeat round to confirm the leader still leads."""

from __future__ import annotations

from dataclasses import dataclass, field

from raft_log.types import NodeId


@dataclass(slots=True)
class ReadRequest:
    """A read asked of the leader: answer (`context`, `index`) to `requester` once a majority acks."""

    context: bytes
    index: int
    requester: NodeId
    acks: set[NodeId] = field(default_factory=set)


class PendingReads:
    """Reads in arrival order; a quorum ack for one confirms it and every read before it."""

    def __init__(self) -> None:
        self._requests: dict[bytes, ReadRequest] = {}

    def __bool__(self) -> bool:
        return bool(self._requests)

    def add(self, request: ReadRequest) -> bool:
        """Queue `request`; False if its context is already waiting (contexts must be unique)."""
        if request.context in self._requests:
            return False
        self._requests[request.context] = request
        return True

    def ack(self, context: bytes, node: NodeId) -> set[NodeId] | None:
        """Record `node`'s heartbeat ack for `context`; the acks so far, or None if unknown."""
        request = self._requests.get(context)
        if request is None:
            return None
        request.acks.add(node)
        return request.acks

    def release_through(self, context: bytes) -> list[ReadRequest]:
        """Remove and return every request up to and including `context`."""
        released = []
        for key in list(self._requests):
            released.append(self._requests.pop(key))
            if key == context:
                break
        return released

    def last_context(self) -> bytes:
        """The newest waiting context (sent with heartbeats), or b''."""
        return next(reversed(self._requests), b"")

    def clear(self) -> None:
        self._requests.clear()
