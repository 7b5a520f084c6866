"""Leader-side consumer sessions: deliveries waiting to be long-polled, and consumer liveness.

The queue state decides what is checked out to whom; a session only buffers those deliveries until
the consumer polls them, and remembers when the consumer was last heard from so that a silent one can
be declared down through the log.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from queue_state.effects import Delivery

DEFAULT_CONSUMER_TIMEOUT_MS = 30000


@dataclass
class ConsumerSession:
    """One consumer (or basic.get holder) as seen by the queue's leader.

    A consumer reading from a time (`since_ms`) is served by gets held under its tag, `prefetch` at
    most outstanding, instead of by the state machine's push delivery. A manual-ack get's holder
    (`get_holder`) has a session only for its timeout: it is never polled.
    """

    tag: str
    timeout_ms: int | None
    last_active_ms: int
    buffer: deque[Delivery] = field(default_factory=deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    down_requested: bool = False
    since_ms: int | None = None
    prefetch: int = 0
    get_holder: bool = False

    def offer(self, deliveries: Iterable[Delivery]) -> None:
        """Add deliveries for the next poll."""
        self.buffer.extend(deliveries)
        if self.buffer:
            self.ready.set()

    def take(self, limit: int) -> list[Delivery]:
        """Remove and return up to `limit` buffered deliveries."""
        taken = [self.buffer.popleft() for _ in range(min(limit, len(self.buffer)))]
        if not self.buffer:
            self.ready.clear()
        return taken

    async def poll(self, limit: int, wait_s: float) -> list[Delivery]:
        """Wait up to `wait_s` for deliveries, then take up to `limit` of them."""
        if not self.buffer and wait_s > 0:
            try:
                await asyncio.wait_for(self.ready.wait(), wait_s)
            except TimeoutError:
                return []
        return self.take(limit)

    def expired(self, now_ms: int) -> bool:
        """True when the consumer has been silent for longer than its timeout."""
        return (
            self.timeout_ms is not None
            and not self.down_requested
            and now_ms - self.last_active_ms > self.timeout_ms
        )


class ConsumerSessions:
    """The sessions of one queue on its leader."""

    def __init__(self) -> None:
        self.sessions: dict[str, ConsumerSession] = {}

    def open(self, tag: str, timeout_ms: int | None, now_ms: int) -> ConsumerSession:
        """Create (or refresh) a session."""
        session = self.sessions.get(tag)
        if session is None:
            session = self.sessions[tag] = ConsumerSession(tag, timeout_ms, now_ms)
        session.timeout_ms = timeout_ms
        session.last_active_ms = now_ms
        return session

    def get(self, tag: str) -> ConsumerSession | None:
        """The session of a consumer, if the leader has one."""
        return self.sessions.get(tag)

    def close(self, tag: str) -> None:
        """Forget a session; a poll waiting on it returns empty."""
        session = self.sessions.pop(tag, None)
        if session is not None:
            session.ready.set()

    def touch(self, tag: str, now_ms: int) -> None:
        """The consumer was heard from."""
        session = self.sessions.get(tag)
        if session is not None:
            session.last_active_ms = now_ms

    def expired(self, now_ms: int) -> list[str]:
        """Consumers silent past their timeout (each reported once)."""
        return [tag for tag, s in self.sessions.items() if s.expired(now_ms)]

    def close_all(self) -> None:
        """Drop every session (leadership moved away)."""
        for tag in list(self.sessions):
            self.close(tag)
