"""A consumer delivering on a streaming connection: a task pushing its deliveries as the queue's leader
makes them (`QueueDoor.poll`), while the consumer holds fewer unacked messages than its prefetch (the
queue's state machine gives it no more), each frame sent once the previous one left (backpressure)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from api import stream_frames as frames
from api.deliveries import DEFAULT_MAX_BYTES
from cluster.errors import ConsumerEnded, NodeError, UnknownConsumer
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_results import MessageRow

POLL_WAIT_S = 1.0  # how often an idle consumer checks that this node still leads its queue
LEADER_MOVED = "leader_moved"
CONSUMER_GONE = "consumer_gone"


class StreamConsumer:
    """Consumer `tag` of `queue` (led here), delivering in batches of up to `prefetch` through `send`."""

    def __init__(
        self, queue: QueueDoor, tag: str, prefetch: int, send: Callable[[bytes], Awaitable[None]]
    ) -> None:
        self.queue = queue
        self.tag = tag
        self._prefetch = prefetch
        self._send = send

    async def deliver(self, delivered: Callable[[Sequence[MessageRow]], None]) -> str:
        """Push deliveries (counting each batch with `delivered`) until the consumer stops delivering
        here; why: LEADER_MOVED, CONSUMER_GONE, why the leader ended it (`consumer_timeout`,
        `consumer_idle`), or a node error's code. Cancel it to stop it sooner."""
        while True:
            if not self.queue.is_leader:
                return LEADER_MOVED
            try:
                rows = await self.queue.poll(self.tag, self._prefetch, POLL_WAIT_S, DEFAULT_MAX_BYTES)
            except ConsumerEnded as exc:
                return exc.code
            except UnknownConsumer:
                return CONSUMER_GONE
            except NodeError as exc:
                return exc.code
            if rows:
                delivered(rows)
                await self._send(frames.deliver(self.tag, rows))
