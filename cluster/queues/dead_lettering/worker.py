"""The at-least-once dead-letter worker of one source queue, running beside the source's leader.

It checks out pending dead letters (`DeadLetterSource.dlx_checkout`), publishes them to the target
queue with confirms (`ConfirmedPublisher`), and only then settles them in the source (`dlx_settle`), in
parts that fit one publish (`publish_parts`), each its own seq. A failed publish (target missing, full,
without quorum, unreachable) is retried with backoff and the same publisher/seq, so the target
deduplicates a retry of the same part. When leadership moves, the new leader's worker takes over the
unsettled ones: duplicates are possible, loss is not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

from cluster.errors import NotLeader
from cluster.queues.dead_lettering.messages import priorities_of, publish_parts
from cluster.replication.stored_message import StoredMessage

log = logging.getLogger(__name__)

DEFAULT_PREFETCH = 32
IDLE_WAIT_S = 1.0
MIN_BACKOFF_S = 0.05
MAX_BACKOFF_S = 5.0

Letter = tuple[int, StoredMessage, int]  # id, message, priority


class DeadLetterSource(Protocol):
    """What the worker needs of its source queue: the dead-letter methods of its door (`QueueDoor`)."""

    @property
    def name(self) -> str: ...

    @property
    def group(self) -> str:
        """The source queue's Raft group (a queue declared again under its name has another)."""
        ...

    @property
    def is_leader(self) -> bool: ...

    def dead_letter_target(self) -> str | None:
        """The queue dead letters go to at least once, or None when they do not."""
        ...

    def dead_letters_pending(self) -> bool:
        """Whether dead letters wait to go at least once (in the state applied here)."""
        ...

    async def dlx_checkout(self, worker: str, prefetch: int) -> list[tuple[int, StoredMessage, int]]:
        """Up to `prefetch` pending dead letters checked out to `worker`, each (id, message, priority)."""
        ...

    async def dlx_settle(self, ids: tuple[int, ...]) -> None:
        """The target confirmed these: they leave the source."""
        ...

    async def wait_applied(self, timeout: float | None) -> None:
        """Wait until the source applies another entry (or the timeout, if any, passes)."""
        ...


class ConfirmedPublisher(Protocol):
    """Publishes to any queue of the cluster with confirms."""

    async def publish_confirmed(
        self,
        target: str,
        messages: Sequence[tuple[StoredMessage, int | None]],
        publisher: str,
        seq: int,
        priorities: Sequence[int] | None = None,
    ) -> None:
        """Publish `messages` (each with its optional expiration in ms, and its priority with
        `priorities`) to `target` as `publisher`'s `seq`; return only once confirmed, raise otherwise."""
        ...


class DeadLetterWorker:
    """Moves one source queue's pending dead letters to its target, at least once."""

    def __init__(
        self,
        leader: DeadLetterSource,
        publisher: ConfirmedPublisher,
        prefetch: int = DEFAULT_PREFETCH,
        *,
        worker_id: str,
    ) -> None:
        """`worker_id` names the worker's checkouts in the queue."""
        self.leader = leader
        self.publisher = publisher
        self.prefetch = prefetch
        self.worker_id = worker_id
        self._seq = 0
        self.published = 0
        self.retries = 0

    async def run(self) -> None:
        """Work until cancelled (`DeadLetterDispatcher` cancels it when leadership moves away).

        An unexpected error never ends the worker: it is logged and the loop goes on, since a
        queue without its worker would keep its dead letters forever.
        """
        while True:
            try:
                batch = await self._checkout()
                if not batch:
                    # With none pending, only an applied entry can bring one: an idle queue costs nothing.
                    pending = self.leader.dead_letters_pending()
                    await self.leader.wait_applied(IDLE_WAIT_S if pending else None)
                    continue
                log.debug("queue %s: %d dead letters checked out", self.leader.name, len(batch))
                await self._deliver(batch)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("queue %s: dead-letter worker error; going on", self.leader.name)
                await asyncio.sleep(MAX_BACKOFF_S)

    async def _checkout(self) -> list[Letter]:
        try:
            return await self.leader.dlx_checkout(self.worker_id, self.prefetch)
        except NotLeader:
            return []

    async def _deliver(self, batch: list[Letter]) -> None:
        for part in publish_parts([len(message.body) for _, message, _ in batch]):
            if not await self._deliver_part(batch[part]):
                return

    async def _deliver_part(self, batch: list[Letter]) -> bool:
        """Publish letters and settle them; False when they are left to the next leader's worker, or
        dropped with the strategy."""
        self._seq += 1
        backoff = MIN_BACKOFF_S
        messages: list[tuple[StoredMessage, int | None]] = [(message, None) for _, message, _ in batch]
        priorities = priorities_of([priority for _, _, priority in batch])
        while True:
            target = self.leader.dead_letter_target()
            if target is None:
                return False  # the strategy changed: the state machine dropped the pending letters
            try:
                await self.publisher.publish_confirmed(
                    target, messages, self.worker_id, self._seq, priorities
                )
                break
            except Exception as exc:  # any failure: keep the letters, try again later
                self.retries += 1
                log.info("queue %s: dead-letter publish to %s failed: %s", self.leader.name, target, exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
        self.published += len(batch)
        ids = tuple(message_id for message_id, _, _ in batch)
        while True:
            try:
                await self.leader.dlx_settle(ids)
                return True
            except NotLeader:
                if not self.leader.is_leader:
                    return False  # the next leader's worker re-publishes (a duplicate, never a loss)
                await asyncio.sleep(MIN_BACKOFF_S)
