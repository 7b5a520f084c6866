"""Publishing dead letters to a target queue wherever its leader is.

A target this node leads is published to through its door; any other goes through a `RemotePublisher`,
which the server layer provides once it serves (`api.remote_publisher`: the publish route's own path to
the leader, over the peer transport), so that `cluster` does not speak the public API itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from cluster.errors import NotLeader
from cluster.queues.queue_results import Published
from cluster.replication.stored_message import StoredMessage


class RemotePublisher(Protocol):
    """Publishes to a queue another node leads, as the publish route does."""

    async def publish(
        self,
        queue: str,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        """Publish `messages` (each with its optional expiration in ms, and its priority with
        `priorities`) to `queue` on its leader, as `publisher`'s `seq` when given; return once confirmed,
        raise otherwise."""
        ...


class LedQueue(Protocol):
    """What publishing needs of a queue this node leads: its door's publish (`QueueDoor.publish`)."""

    async def publish(
        self,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str | None,
        seq: int | None,
        *,
        priorities: Sequence[int] | None = None,
    ) -> Published: ...


class ClusterPublisher:
    """Publishes to any queue of the cluster, with confirms (a `ConfirmedPublisher`).

    `led(queue)` is the door of a queue this node leads, else None; `remote` publishes to any other (None
    until the server layer gives it)."""

    def __init__(self, led: Callable[[str], LedQueue | None], remote: RemotePublisher | None = None) -> None:
        self._led = led
        self.remote = remote

    async def publish_confirmed(
        self,
        target: str,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        """Publish to `target` (each message at its priority with `priorities`), as `publisher`'s `seq`
        when given; return only once confirmed, raise otherwise (a target led elsewhere on a node
        without a `RemotePublisher` is NotLeader)."""
        local = self._led(target)
        if local is not None:
            await local.publish(messages, publisher, seq, priorities=priorities)
            return
        if self.remote is None:
            raise NotLeader(f"queue '{target}' is led by another node, and this node cannot publish there")
        await self.remote.publish(target, messages, publisher, seq, priorities)
