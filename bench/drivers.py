"""What a workload needs from a broker: declare queues, open connections, confirmed sends, acked consumes.

A driver is bound to one running cluster; `home` picks the node a queue is declared through and
connected to (both brokers place a new queue's leader on the node the client talks to).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

OnMessage = Callable[[bytes], None]


class Connection(Protocol):
    """One client connection to a broker node, used by one publisher or one consumer."""

    async def send(self, body: bytes) -> asyncio.Future[Any]:
        """Queue `body` for publishing; the returned future resolves once the broker confirmed it."""
        ...

    async def flush(self) -> None:
        """Wait until every message sent through this connection is confirmed."""
        ...

    async def consume(self, prefetch: int, on_message: OnMessage, stop: asyncio.Event) -> None:
        """Consume with manual acks and `prefetch` unacked at most, until `stop` is set."""
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


class Driver(Protocol):
    """A broker under test, reached through one client library."""

    broker: str
    client: str

    async def declare(self, queue: str, home: int = 0) -> None:
        """Declare a replicated queue (3 replicas) through node `home`, deleting any old one first."""
        ...

    async def delete(self, queue: str) -> None:
        """Delete a queue and its messages."""
        ...

    async def connect(
        self, queue: str, home: int = 0, *, in_flight: int = 1000, direct: bool = False
    ) -> Connection:
        """Open a connection for `queue` on node `home`; sends keep at most `in_flight` unconfirmed.
        With `direct` it talks to node `home` even where another node leads the queue."""
        ...

    async def queue_length(self, queue: str, home: int = 0) -> int:
        """How many messages the queue holds, asked through node `home` only."""
        ...


class Cluster(Protocol):
    """A running 3-node broker cluster the harness can observe and restart node by node."""

    @property
    def urls(self) -> list[str]:
        """Every node's client URL."""
        ...

    def pids(self) -> dict[str, int]:
        """Node name to the pid of its broker process."""
        ...

    def stop_node(self, index: int) -> None:
        """Stop one node cleanly and wait until it has exited."""
        ...

    def start_node(self, index: int) -> None:
        """Start a stopped node again on its existing data."""
        ...

    def stop(self) -> None:
        """Stop every node."""
        ...
