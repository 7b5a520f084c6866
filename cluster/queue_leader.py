"""What a queue's leader does beyond applying: consumer sessions, timers, and acting on effects."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from cluster.bodies import StoredMessage
from cluster.consumer_sessions import ConsumerSessions
from cluster.leader_clock import LeaderClock
from cluster.queue_replica import QueueReplica, encode_op
from cluster.raft_host import RaftHost
from queue_state.commands import Command, ConsumerDown, Tick
from queue_state.effects import DeadLetter, Deliver, Delivery, QueueExpired

log = logging.getLogger(__name__)

DELETE_RETRY_MS = 1000

DeadLetterSink = Callable[[str, DeadLetter, list[tuple[Delivery, StoredMessage]], int], None]


class QueueLeader:
    """Leader-side services of one queue hosted on this node."""

    def __init__(
        self,
        name: str,
        group: str,
        replica: QueueReplica,
        host: RaftHost,
        clock: LeaderClock,
        *,
        on_dead_letter: DeadLetterSink,
        request_delete: Callable[[str, str], None],
        on_leadership: Callable[[QueueLeader, bool], None],
        consumer_timeout_ms: int,
    ) -> None:
        self.name = name
        self.group = group
        self.replica = replica
        self.host = host
        self.clock = clock
        self.consumer_timeout_ms = consumer_timeout_ms
        self.sessions = ConsumerSessions()
        self._on_dead_letter = on_dead_letter
        self._request_delete = request_delete
        self._on_leadership = on_leadership
        self._applied = asyncio.Event()
        self._tick_in_flight = False
        self._delete_due_ms: int | None = None
        replica.effect_sink = self._on_effects
        replica.role_listener = self._on_role
        replica.applied_listener = self._applied.set
        replica.time_listener = clock.observe

    @property
    def is_leader(self) -> bool:
        """True while this node leads the queue's group."""
        return self.replica.is_leader

    def now_ms(self) -> int:
        """The leader's stamp for the next command (`LeaderClock`: the wall clock, bounded)."""
        return self.clock.stamp()

    async def submit(self, command: Command, bodies: list[StoredMessage] | None = None) -> Any:
        """Replicate one command and return its reply once applied on this leader."""
        return await self.host.submit(self.group, encode_op(command, bodies))

    def _on_effects(self, effects: list[Any]) -> None:
        for effect in effects:
            if isinstance(effect, Deliver):
                session = self.sessions.get(effect.consumer)
                if session is None:
                    session = self.sessions.open(
                        effect.consumer, self.timeout_of(effect.consumer), self.now_ms()
                    )
                session.offer(effect.deliveries)
            elif isinstance(effect, DeadLetter):
                found = self.replica.bodies.with_bodies(effect.deliveries)
                self._on_dead_letter(self.name, effect, found, self.now_ms())
            elif isinstance(effect, QueueExpired):
                self._request_delete(self.name, self.group)

    def timeout_of(self, consumer: str) -> int:
        """A consumer's own timeout as registered through the log, else the node's default."""
        for info in self.replica.machine.consumers():
            if info.name == consumer and info.timeout_ms is not None:
                return info.timeout_ms
        return self.consumer_timeout_ms

    async def wait_applied(self, timeout: float) -> None:
        """Wait until this leader applies another entry of the queue (or the timeout passes)."""
        self._applied.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._applied.wait(), timeout)

    def _on_role(self, is_leader: bool) -> None:
        self.sessions.close_all()
        self._on_leadership(self, is_leader)
        if not is_leader:
            return
        now = self.now_ms()
        for consumer in self.replica.machine.consumers():
            session = self.sessions.open(consumer.name, consumer.timeout_ms or self.consumer_timeout_ms, now)
            session.offer(self.replica.machine.checked_out(consumer.name))

    def on_timer(self) -> None:
        """Called periodically on the leader: due Ticks and silent consumers go through the log, and a
        sealed queue's deletion is asked of the metadata every DELETE_RETRY_MS until it is gone."""
        if not self.is_leader:
            return
        now = self.now_ms()
        if self.replica.machine.sealed:
            self._delete_due_ms = self._delete_due_ms or now + DELETE_RETRY_MS
            if now >= self._delete_due_ms:
                self._delete_due_ms = now + DELETE_RETRY_MS
                self._request_delete(self.name, self.group)
        deadline = self.replica.machine.next_deadline_ms()
        if deadline is not None and deadline <= now and not self._tick_in_flight:
            self._tick_in_flight = True
            self._fire(Tick(now), done=self._tick_done)
        for tag in self.sessions.expired(now):
            log.info("queue %s: consumer %s timed out", self.name, tag)
            self._fire(ConsumerDown(now, tag))
            self.sessions.close(tag)

    def _tick_done(self, _: asyncio.Future) -> None:
        self._tick_in_flight = False

    def _fire(self, command: Command, done: Callable[[asyncio.Future], None] | None = None) -> None:
        try:
            future = self.host.submit(self.group, encode_op(command))
        except Exception as exc:  # not leader any more: the next leader's timer takes over
            log.debug("queue %s: %s not submitted: %s", self.name, type(command).__name__, exc)
            if done is not None:
                self._tick_in_flight = False
            return
        future.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)
        if done is not None:
            future.add_done_callback(done)
