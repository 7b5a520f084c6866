"""Leader-side consumer sessions, from opening to ending: deliveries waiting to be long-polled, and
consumer liveness.

The queue state decides what is checked out to whom, and since when (handed out or last touched); a
session only buffers those deliveries until the consumer polls them (a poll hands out only those the
state says the consumer still holds from that hand-out), remembers when the consumer was last heard from
(and whether a poll is waiting), and, once the leader ended the consumer, why: its next request is told
(`ended`). Sessions are opened when a consumer registers or gets, again from the applied state after a
leader change, and for a delivery to a consumer without one; they end when overdue (`due_ends`): the
door puts each end through the log.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from cluster.errors import ConsumerEnded, FormatsNotYetKnown, UnknownConsumer
from cluster.queues.queue_replica import QueueReplica
from queue_state.consumers import ConsumerInfo
from queue_state.effects import Delivery

CONSUMER_TIMEOUT = "consumer_timeout"
"""Why a consumer ended: it held a delivery longer than its consumer timeout without settling or
touching it."""
CONSUMER_IDLE = "consumer_idle"
"""Why a consumer ended: it neither polled nor settled nor touched for the idle timeout (and no poll of
it waited): nobody runs it, and what it held went back as plain returns."""
ENDED_KEPT = 10000
"""How many ended consumers a leader remembers the reason of."""
UNKNOWN_FORMATS_GRACE_MS = 5000
"""How long an idle end waits for every node to say which queue operations it reads (peers say so every
second once linked) before it ends the consumer as gone down, which every version reads: a node that
never said (down since this leader started, or joined and died) must not hold it back for ever."""


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
    """The sessions of one queue on its leader, and why the consumers it ended ended.

    `replica` is the queue's replica here, whose applied state says who holds what; `now` the leader's
    clock, read whenever a session is opened or heard from; `consumer_timeout_ms` the node's consumer
    timeout and `idle_timeout_ms` how long a consumer may go unheard from.
    """

    def __init__(
        self,
        queue: str,
        replica: QueueReplica,
        now: Callable[[], int],
        consumer_timeout_ms: int,
        idle_timeout_ms: int,
        opened: Callable[[], None],
    ) -> None:
        """`opened` is called each time a session is created (its timeouts may come due)."""
        self.sessions: dict[str, ConsumerSession] = {}
        self._opened = opened
        self._queue = queue
        self._replica = replica
        self._now = now
        self._consumer_timeout_ms = consumer_timeout_ms
        self._idle_timeout_ms = idle_timeout_ms
        self._ended: OrderedDict[str, str] = OrderedDict()
        self._undecided_since: dict[str, int] = {}  # idle ends waiting to know what every node reads

    # -- opening ------------------------------------------------------------------------------------

    def register(
        self, tag: str, timeout_ms: int | None, since_ms: int | None, prefetch: int, auto_ack: bool
    ) -> ConsumerSession:
        """The session of a consumer registering (a reader reads from `since_ms`)."""
        session = self._open(tag, timeout_ms, self._now())
        session.since_ms, session.prefetch, session.auto_ack = since_ms, prefetch, auto_ack
        return session

    def open_get(self, holder: str) -> ConsumerSession:
        """The session of a manual-ack get's holder, its Get on its way to the log."""
        session = self._open(holder, None, self._now())
        session.get_holder = session.getting = True
        return session

    def current(self, tag: str) -> ConsumerSession:
        """The session of a consumer registered in the queue state (a reader included), made anew after a
        leader change; a get holder's session is no consumer's. ConsumerEnded for one this leader ended.
        Read only once this leader serves consumers."""
        reason = self.ended(tag)
        if reason is not None:
            raise ConsumerEnded(f"consumer '{tag}' of queue '{self._queue}' ended: {reason}", code=reason)
        session = self.sessions.get(tag)
        registered = self._replica.machine.consumer(tag)
        if session is not None and not session.get_holder and (registered is not None or session.unlogged):
            return session
        if registered is not None:
            return self._open_consumer(registered, self._now())
        if session is not None and not session.get_holder:
            self.close(tag)  # the consumer left the state (cancelled, or down)
        raise UnknownConsumer(f"no consumer '{tag}' on queue '{self._queue}'")

    def deliver(self, consumer: str, deliveries: Iterable[Delivery]) -> None:
        """Offer deliveries the state handed to `consumer`: to its session, else (unless its end is on its
        way) to one opened for it, which is offered all it holds, these too."""
        session = self.sessions.get(consumer)
        if session is not None:
            session.offer(deliveries)
        elif self.ended(consumer) is None:
            registered = self._replica.machine.consumer(consumer)
            if registered is not None:
                self._open_consumer(registered, self._now())

    def reopen_holders(self) -> None:
        """Open a session for every holder the state says holds messages or is registered (consumers and
        readers with their own timeout and what they hold offered to them, manual-ack get holders with
        none, so that what one holds past its consumer timeout returns to the queue whoever led when it
        was taken)."""
        now = self._now()
        machine = self._replica.machine
        for holder in [consumer.name for consumer in machine.consumers()] + machine.get_holders():
            self._reopen(holder, now)

    def _reopen(self, holder: str, now: int) -> None:
        """Open a session for a holder the queue state holds: a consumer (`_open_consumer`), or a
        manual-ack get holder with none of its own."""
        consumer = self._replica.machine.consumer(holder)
        if consumer is not None:
            self._open_consumer(consumer, now)
        elif holder in self._replica.machine.get_holders():
            self._open(holder, None, now).get_holder = True

    def _open_consumer(self, consumer: ConsumerInfo, now: int) -> ConsumerSession:
        """A session for a consumer the queue state holds, with its own timeout and auto-ack, what it holds
        offered to it (again) in place of anything buffered, and for a reader its time and prefetch."""
        session = self._open(consumer.name, consumer.timeout_ms, now)
        session.since_ms, session.prefetch = consumer.since_ms, consumer.prefetch
        session.auto_ack = consumer.auto_ack
        held = self._replica.machine.checked_out(consumer.name)
        session.buffer.clear()
        session.offer(held)
        return session

    def _open(self, tag: str, timeout_ms: int | None, now_ms: int) -> ConsumerSession:
        """Create (or refresh) a session."""
        session = self.sessions.get(tag)
        if session is None:
            session = self.sessions[tag] = ConsumerSession(tag, timeout_ms, now_ms)
            self._opened()
        session.timeout_ms = timeout_ms
        session.last_active_ms = now_ms
        return session

    # -- living -------------------------------------------------------------------------------------

    def get(self, tag: str) -> ConsumerSession | None:
        """The session of a consumer, if the leader has one."""
        return self.sessions.get(tag)

    def touch(self, tag: str) -> None:
        """The consumer was heard from."""
        now = self._now()
        session = self.sessions.get(tag)
        if session is not None:
            session.last_active_ms = now

    def holds(self, tag: str) -> Callable[[Delivery], bool]:
        """Whether consumer `tag` still holds a delivery from that hand-out, as this leader applied it."""
        return lambda delivery: self._replica.machine.holds(tag, delivery)

    def hold_ms(self, consumer: str | None, over_http: bool = False) -> int:
        """How long a delivery of `consumer` (None: of a manual-ack get) may be held without an ack, nack
        or touch before something happens to it: the consumer timeout in force for it, or the queue's
        lease period when that is shorter; with `over_http` (a consumer heard from only by its requests,
        not polled for by a stream) the idle timeout when shorter still, after which a consumer that
        was not heard from ends (`due_ends`)."""
        session = None if consumer is None else self.sessions.get(consumer)
        if session is not None:
            own = session.timeout_ms
        else:
            own = None if consumer is None else self._own_timeout(consumer)
        hold = self._timeout(own)
        lease = self._replica.machine.config.lease_period
        if lease is not None:
            hold = min(hold, lease)
        return min(hold, self._idle_timeout_ms) if over_http and consumer is not None else hold

    def _own_timeout(self, consumer: str) -> int | None:
        """A consumer's own timeout as registered through the log."""
        registered = self._replica.machine.consumer(consumer)
        return None if registered is None else registered.timeout_ms

    def _timeout(self, own: int | None) -> int:
        """A holder's consumer timeout: its own when it gave one, else the queue's `x-consumer-timeout`,
        else the node's default (RabbitMQ's precedence)."""
        if own is not None:
            return own
        queue = self._replica.machine.config.consumer_timeout
        return self._consumer_timeout_ms if queue is None else queue

    # -- ending ---------------------------------------------------------------------------------------

    def due_ends(self, now_ms: int, plain_returns: Callable[[], bool]) -> list[tuple[str, str, bool]]:
        """The consumers to end now (`_overdue`), each with why and whether as a plain return: an idle end
        is one where every node reads plain returns (`plain_returns()`, FormatsNotYetKnown while not
        known), else a consumer gone down. One whose end cannot be decided yet waits for a later call, at
        most UNKNOWN_FORMATS_GRACE_MS; it then ends as gone down, which every version reads."""
        overdue = self._overdue(now_ms)
        for gone in self._undecided_since.keys() - {tag for tag, _ in overdue}:
            del self._undecided_since[gone]  # ended otherwise meanwhile
        due = []
        for tag, reason in overdue:
            try:
                plain = reason == CONSUMER_IDLE and plain_returns()
            except FormatsNotYetKnown:
                since = self._undecided_since.setdefault(tag, now_ms)
                if now_ms - since < UNKNOWN_FORMATS_GRACE_MS:
                    continue  # a later call decides, once every node has said what it reads
                plain = False
            self._undecided_since.pop(tag, None)
            due.append((tag, reason, plain))
        return due

    def _overdue(self, now: int) -> list[tuple[str, str]]:
        """The holders to end now, each with why: one holding a message (handed out or last touched)
        longer than its consumer timeout, a failure; a consumer silent for the idle timeout (the lease of
        a consumer: nobody runs it), a plain return. A get holder's session ends quietly once it holds
        nothing, not while its Get is on its way to the log."""
        machine, overdue, settled_gets = self._replica.machine, [], []
        for tag, session in self.sessions.items():
            started = machine.hold_started_ms(tag)
            if started is not None and now - started > self._timeout(session.timeout_ms):
                overdue.append((tag, CONSUMER_TIMEOUT))
            elif session.get_holder:
                if started is None and not session.getting:
                    settled_gets.append(tag)
            elif session.idle(now, self._idle_timeout_ms):
                overdue.append((tag, CONSUMER_IDLE))
        for tag in settled_gets:
            self.close(tag)
        return overdue

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

    def end_not_committed(self, tag: str, reopen: bool) -> None:
        """An end that did not commit here: forget it, and with `reopen` (this leader serves) open the
        holder's session again, so that the leader's timer decides again."""
        self.forget_ended(tag)
        if reopen:
            self._reopen(tag, self._now())

    def ended(self, tag: str) -> str | None:
        """Why the leader ended consumer `tag`, if it did."""
        return self._ended.get(tag)

    def forget_ended(self, tag: str) -> bool:
        """Forget that consumer `tag` ended; True if it had."""
        return self._ended.pop(tag, None) is not None

    def close_all(self) -> None:
        """Drop every session and every end remembered (leadership moved: another leader decides now)."""
        for tag in list(self.sessions):
            self.close(tag)
        self._ended.clear()
