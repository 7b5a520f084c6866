"""Leader-side consumer sessions: deliveries waiting to be long-polled, and consumer liveness.

The queue state decides what is checked out to whom, and since when (handed out or last touched); a
session only buffers those deliveries until the consumer polls them (a poll hands out only those the
state says the consumer still holds from that hand-out), remembers when the consumer was last heard from
(and whether a poll is waiting), and, once the leader ended the consumer, why: its next request is told
(`ended`).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from queue_state.effects import Delivery

CONSUMER_TIMEOUT = "consumer_timeout"
"""Why a consumer ended: it held a delivery longer than its consumer timeout without settling or
touching it."""
CONSUMER_IDLE = "consumer_idle"
"""Why a consumer ended: it neither polled nor settled nor touched for the idle timeout (and no poll of
it waited): nobody runs it, and what it held went back as plain returns."""
ENDED_KEPT = 10000
"""How many ended consumers a leader remembers the reason of."""


@dataclass
class ConsumerSession:
    """One consumer (or basic.get holder) as seen by the queue's leader.

    `timeout_ms` is the consumer's own consumer timeout (None: the queue's, else the node's). A consumer
    reading from a time (`since_ms`) is served by gets held under its tag, `prefetch` at most
    outstanding, instead of by the state machine's push delivery. A manual-ack get's holder
    (`get_holder`) has a session only for its timeout: it is never polled; `getting` while its Get is
    not applied yet (it holds nothing so far, and must not be closed for that). `auto_ack`: each poll
    settles what it takes. `unlogged`: a reader registered with this leader only (while a node reads no
    readers), which the state knows only by what it holds. `closed` once the leader forgot the session:
    a poll waiting on it answers what it has.
    """

    tag: str
    timeout_ms: int | None
    last_active_ms: int
    buffer: deque[Delivery] = field(default_factory=deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    since_ms: int | None = None
    prefetch: int = 0
    get_holder: bool = False
    getting: bool = False
    polls: int = 0
    auto_ack: bool = False
    unlogged: bool = False
    closed: bool = False

    def offer(self, deliveries: Iterable[Delivery]) -> None:
        """Add deliveries for the next poll."""
        self.buffer.extend(deliveries)
        if self.buffer:
            self.ready.set()

    def offer_again(self, taken: list[Delivery]) -> None:
        """Put deliveries taken by a poll that failed back at the front, for the next poll."""
        self.buffer.extendleft(reversed(taken))
        if self.buffer:
            self.ready.set()

    def take(self, limit: int, holds: Callable[[Delivery], bool]) -> list[Delivery]:
        """Remove and return up to `limit` buffered deliveries that the consumer still holds from that
        very hand-out (`holds`, the applied state); those it no longer does (returned, its lease ended,
        another took it) are dropped."""
        taken: list[Delivery] = []
        while self.buffer and len(taken) < limit:
            delivery = self.buffer.popleft()
            if holds(delivery):
                taken.append(delivery)
        if not self.buffer:
            self.ready.clear()
        return taken

    async def poll(self, limit: int, wait_s: float, holds: Callable[[Delivery], bool]) -> list[Delivery]:
        """Take up to `limit` deliveries (`take`), waiting up to `wait_s` for some."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            taken = self.take(limit, holds)
            remaining = deadline - loop.time()
            if taken or self.closed or remaining <= 0:
                return taken
            try:
                await asyncio.wait_for(self.ready.wait(), remaining)
            except TimeoutError:
                return []

    def idle(self, now_ms: int, idle_ms: int) -> bool:
        """True when the consumer has not been heard from (a poll, settle or touch, or since this leader
        caught up) for more than `idle_ms`, and no poll of it is waiting."""
        return not self.polls and now_ms - self.last_active_ms > idle_ms


class ConsumerSessions:
    """The sessions of one queue on its leader, and why the consumers it ended ended."""

    def __init__(self) -> None:
        self.sessions: dict[str, ConsumerSession] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()

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
            session.closed = True
            session.ready.set()

    def end(self, tag: str, reason: str) -> None:
        """Close a session the leader ended for `reason`, remembered for the consumer's next request."""
        self.close(tag)
        self._ended[tag] = reason
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)

    def ended(self, tag: str) -> str | None:
        """Why the leader ended consumer `tag`, if it did."""
        return self._ended.get(tag)

    def forget_ended(self, tag: str) -> bool:
        """Forget that consumer `tag` ended; True if it had."""
        return self._ended.pop(tag, None) is not None

    def touch(self, tag: str, now_ms: int) -> None:
        """The consumer was heard from."""
        session = self.sessions.get(tag)
        if session is not None:
            session.last_active_ms = now_ms

    def close_all(self) -> None:
        """Drop every session and every end remembered (leadership moved: another leader decides now)."""
        for tag in list(self.sessions):
            self.close(tag)
        self._ended.clear()
