"""The at-least-once dead-letter worker of one source queue, running beside the source's leader.

It checks out pending dead letters (`DeadLetterSource.dlx_checkout`), routes them along the source's
route each time it sends them (`DeadLetterRouter`: the queues may change with the bindings), publishes
them to every queue they reach with confirms (`ConfirmedPublisher`), in parts that fit one publish
(`queue_parts`), and settles each in the source (`dlx_settle`) only once every queue it reaches
confirmed it. A letter that reaches no queue (an exchange without a matching binding, a missing queue)
or whose publish failed (target full, without quorum, unreachable) waits in the source and is sent
again with backoff; a part sent again goes as the same publisher and seq, so its target deduplicates
it. When leadership moves, the new leader's worker takes over the unsettled ones: duplicates are
possible, loss is not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

from cluster.errors import NotLeader
from cluster.queues.dead_lettering.messages import priorities_of
from cluster.queues.dead_lettering.routes import DeadLetterRouter, RoutedLetters, queue_parts
from cluster.replication.stored_message import StoredMessage
from queue_state.arguments import DeadLetterRoute

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

    def dead_letter_route(self) -> DeadLetterRoute | None:
        """Where dead letters go at least once, or None when they do not."""
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
    """Moves one source queue's pending dead letters to the queues `router` routes them to, at least
    once."""

    def __init__(
        self,
        leader: DeadLetterSource,
        publisher: ConfirmedPublisher,
        router: DeadLetterRouter,
        prefetch: int = DEFAULT_PREFETCH,
        *,
        worker_id: str,
    ) -> None:
        """`worker_id` names the worker's checkouts in the queue."""
        self.leader = leader
        self.publisher = publisher
        self.router = router
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
        """Send the batch round after round until each letter is settled; return early when the rest are
        left to the next leader's worker, or dropped with the strategy."""
        confirmed: dict[int, set[str]] = {message_id: set() for message_id, _, _ in batch}  # by which queues
        seqs: dict[tuple[int, ...], int] = {}  # the letters of a part: its seq, the same every round
        backoff = MIN_BACKOFF_S
        while batch:
            route = self.leader.dead_letter_route()
            if route is None:
                return  # the strategy changed: the state machine dropped the pending letters
            routed = self.router.route(route, self.leader.name, [message for _, message, _ in batch])
            reached = dict(zip((message_id for message_id, _, _ in batch), routed.queues, strict=True))
            missing = [queues - confirmed[message_id] for message_id, queues in reached.items()]
            sends = queue_parts(routed.messages, missing).items()
            await asyncio.gather(
                *(self._publish(q, parts, batch, routed, confirmed, seqs) for q, parts in sends)
            )
            done = {
                message_id
                for message_id, queues in reached.items()
                if queues and queues <= confirmed[message_id]
            }
            if done and not await self._settle(tuple(sorted(done))):
                return
            self.published += len(done)
            batch = [letter for letter in batch if letter[0] not in done]
            if batch:
                unroutable = sum(1 for queues in reached.values() if not queues)
                if unroutable:
                    log.info("queue %s: %d dead letters reach no queue; kept", self.leader.name, unroutable)
                backoff = MIN_BACKOFF_S if done else min(backoff * 2, MAX_BACKOFF_S)
                await asyncio.sleep(backoff)

    async def _publish(
        self,
        queue: str,
        parts: list[list[int]],
        batch: list[Letter],
        routed: RoutedLetters,
        confirmed: dict[int, set[str]],
        seqs: dict[tuple[int, ...], int],
    ) -> None:
        """Publish the parts of the letters `queue` still needs, in order, noting each it confirmed; stop
        at the first that fails (a later part waits for it, as its letters came later)."""
        for part in parts:
            ids = tuple(batch[p][0] for p in part)
            if ids not in seqs:
                self._seq += 1
                seqs[ids] = self._seq
            messages: list[tuple[StoredMessage, int | None]] = [(routed.messages[p], None) for p in part]
            priorities = priorities_of([batch[p][2] for p in part])
            try:
                await self.publisher.publish_confirmed(queue, messages, self.worker_id, seqs[ids], priorities)
            except Exception as exc:  # any failure: keep the letters, try again later
                self.retries += 1
                log.info("queue %s: dead-letter publish to %s failed: %s", self.leader.name, queue, exc)
                return
            for message_id in ids:
                confirmed[message_id].add(queue)

    async def _settle(self, ids: tuple[int, ...]) -> bool:
        """Settle letters every queue they reach confirmed; False when they are left to the next
        leader's worker (which publishes them again: a duplicate, never a loss)."""
        while True:
            try:
                await self.leader.dlx_settle(ids)
                return True
            except NotLeader:
                if not self.leader.is_leader:
                    return False
                await asyncio.sleep(MIN_BACKOFF_S)
