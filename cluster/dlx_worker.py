"""The at-least-once dead-letter worker of one source queue, running beside the source's leader.

It checks out pending dead letters (`DlxCheckout`), publishes them to the target queue with confirms,
and only then settles them in the source (`DlxSettle`). A failed publish (target missing, full, without
quorum, unreachable) is retried with backoff and the same publisher/seq, so the target deduplicates a
retry of the same batch. When leadership moves, the new leader's worker takes over the unsettled ones:
duplicates are possible, loss is not.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from cluster.bodies import StoredMessage
from cluster.dead_letter import with_death
from cluster.proposals import ProposalFailed
from cluster.queue_leader import QueueLeader
from queue_state.commands import DlxCheckout, DlxSettle
from queue_state.effects import Deliveries

log = logging.getLogger(__name__)

DEFAULT_PREFETCH = 32
IDLE_WAIT_S = 1.0
MIN_BACKOFF_S = 0.05
MAX_BACKOFF_S = 5.0

PublishFn = Callable[[str, list[tuple[StoredMessage, int | None]], str, int], Awaitable[None]]


class DeadLetterWorker:
    """Moves one source queue's pending dead letters to its target, at least once."""

    def __init__(self, service: QueueLeader, publish: PublishFn, prefetch: int = DEFAULT_PREFETCH) -> None:
        self.service = service
        self.publish = publish
        self.prefetch = prefetch
        self.worker_id = f"dlx-{uuid.uuid4().hex}"
        self._seq = 0
        self.published = 0
        self.retries = 0

    async def run(self) -> None:
        """Work until cancelled (the node cancels it when leadership moves away).

        An unexpected error never ends the worker: it is logged and the loop goes on, since a
        queue without its worker would keep its dead letters forever.
        """
        while True:
            try:
                batch = await self._checkout()
                if not batch:
                    await self.service.wait_applied(IDLE_WAIT_S)
                    continue
                log.debug("queue %s: %d dead letters checked out", self.service.name, len(batch))
                await self._deliver(batch)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("queue %s: dead-letter worker error; going on", self.service.name)
                await asyncio.sleep(MAX_BACKOFF_S)

    async def _checkout(self) -> list[tuple[int, StoredMessage]]:
        config = self.service.replica.machine.config
        if not config.dead_letters_at_least_once or not self.service.replica.machine.stats().dlx_pending:
            return []
        command = DlxCheckout(self.service.now_ms(), self.worker_id, self.prefetch)
        try:
            reply = await self.service.submit(command)
        except ProposalFailed:
            return []
        if not isinstance(reply, Deliveries):
            return []
        now = self.service.now_ms()
        batch = []
        for delivery, reason in zip(reply.deliveries, reply.reasons, strict=True):
            stored = self.service.replica.bodies.get(delivery.id)
            if stored is None:
                log.error("queue %s: dead letter %d has no body", self.service.name, delivery.id)
                continue
            headers = with_death(stored.headers, self.service.name, reason, now)
            batch.append((delivery.id, StoredMessage(stored.body, headers, stored.encoding)))
        return batch

    async def _deliver(self, batch: list[tuple[int, StoredMessage]]) -> None:
        self._seq += 1
        backoff = MIN_BACKOFF_S
        messages = [(message, None) for _, message in batch]
        while True:
            target = self.service.replica.machine.config.dead_letter_queue
            if target is None or not self.service.replica.machine.config.dead_letters_at_least_once:
                return  # the strategy changed: the state machine dropped the pending letters
            try:
                await self.publish(target, messages, self.worker_id, self._seq)
                break
            except Exception as exc:  # any failure: keep the letters, try again later
                self.retries += 1
                log.info("queue %s: dead-letter publish to %s failed: %s", self.service.name, target, exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
        self.published += len(batch)
        ids = tuple(message_id for message_id, _ in batch)
        while True:
            try:
                await self.service.submit(DlxSettle(self.service.now_ms(), ids))
                return
            except ProposalFailed:
                if not self.service.is_leader:
                    return  # the next leader's worker re-publishes (a duplicate, never a loss)
                await asyncio.sleep(MIN_BACKOFF_S)
