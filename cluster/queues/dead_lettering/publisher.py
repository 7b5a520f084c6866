"""Publishing dead letters to a target queue wherever its leader is.

A target this node leads is published to through its door; any other goes through a `RemotePublisher`,
which the server layer provides (`api.remote_publisher`, the node-to-node HTTP call), so that `cluster`
does not speak the public HTTP API itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from cluster.errors import NotLeader
from cluster.queues.queue_results import Published
from cluster.replication.stored_message import StoredMessage


class RemotePublisher(Protocol):
    """Publishes through another node, which passes the publish on to the queue's leader."""

    async def publish(
        self,
        via: str,
        queue: str,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str | None,
        seq: int | None,
        priorities: Sequence[int] | None = None,
    ) -> None:
        """Publish `messages` (each with its optional expiration in ms, and its priority with
        `priorities`) to `queue` through the node whose HTTP API is at `via`, as `publisher`'s `seq` when
        given; return once confirmed, raise otherwise."""
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

    `led(queue)` is the door of a queue this node leads, else None; `via(queue)` the HTTP base URL of the
    node to publish through otherwise (the queue's leader when known)."""

    def __init__(
        self,
        led: Callable[[str], LedQueue | None],
        via: Callable[[str], str],
        remote: RemotePublisher | None,
    ) -> None:
        self._led = led
        self._via = via
        self._remote = remote

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
        if self._remote is None:
            raise NotLeader(f"queue '{target}' is led by another node, and this node cannot publish there")
        await self._remote.publish(self._via(target), target, messages, publisher, seq, priorities)
