"""What a node does with dead letters: publishes those a queue it leads dead-letters at most once, and
runs an at-least-once worker beside every source queue it leads."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from cluster.queues.dead_lettering.messages import dead_letter_messages, priorities_of
from cluster.queues.dead_lettering.publisher import ClusterPublisher
from cluster.queues.dead_lettering.routes import DeadLetterRouter, queue_parts
from cluster.queues.dead_lettering.worker import DEFAULT_PREFETCH, DeadLetterSource, DeadLetterWorker
from cluster.replication.stored_message import StoredMessage
from queue_state.effects import DeadLetter, Delivery

log = logging.getLogger(__name__)


class DeadLetterDispatcher:
    """Sends on one node's dead letters through `publisher`, to the queues `router` routes them to; each
    at-least-once worker checks out up to `prefetch` dead letters at a time."""

    def __init__(
        self,
        publisher: ClusterPublisher,
        router: DeadLetterRouter,
        prefetch: int = DEFAULT_PREFETCH,
        *,
        new_token: Callable[[], str],
    ) -> None:
        """`new_token` names each worker."""
        self._new_token = new_token
        self.prefetch = prefetch
        self.publisher = publisher
        self.router = router
        self.workers: dict[str, tuple[DeadLetterWorker, asyncio.Task[None]]] = {}  # by source group

    def dead_lettered(
        self, source: str, effect: DeadLetter, held: list[tuple[Delivery, StoredMessage]], now_ms: int
    ) -> None:
        """At most once: publish what `source` dead-lettered (with their bodies, `held`) to every queue
        its route reaches (in parts, `publish_parts`), without waiting and forgetting them on failure; a
        letter that reaches no queue is dropped, as RabbitMQ drops it."""
        letters = dead_letter_messages(source, effect.reason, held, now_ms, effect.reason_text)
        routed = self.router.route(effect.route, source, letters)
        unroutable = sum(1 for queues in routed.queues if not queues)
        if unroutable:
            log.info("queue %s: %d dead-lettered (%s) reached no queue", source, unroutable, effect.reason)
        levels = [delivery.priority for delivery, _ in held]
        for target, parts in queue_parts(routed.messages, routed.queues).items():
            for part in parts:
                messages = [(routed.messages[p], None) for p in part]
                publish = self._publish_once(target, messages, priorities_of([levels[p] for p in part]))
                asyncio.get_running_loop().create_task(publish)

    async def _publish_once(
        self, target: str, messages: Sequence[tuple[StoredMessage, int | None]], priorities: list[int] | None
    ) -> None:
        try:
            await self.publisher.publish_confirmed(target, messages, None, None, priorities)
        except Exception as exc:  # at most once: what the target did not take is gone
            log.warning("%d at-most-once dead letter(s) for %s dropped: %s", len(messages), target, exc)

    def leadership_changed(self, source: DeadLetterSource, is_leader: bool) -> None:
        """The at-least-once worker of a source queue runs where its leader is."""
        running = self.workers.pop(source.group, None)
        if running is not None:
            running[1].cancel()
        if is_leader:
            worker_id = f"dlx-{self._new_token()}"
            worker = DeadLetterWorker(source, self.publisher, self.router, self.prefetch, worker_id=worker_id)
            task = asyncio.get_running_loop().create_task(worker.run())
            self.workers[source.group] = (worker, task)
