"""A publish as the API takes it: read and checked from the request's body on the node the client called
(`read_publish`), and run on the queue's leader (`PublishJob.run`), whether the request reached it over
HTTP or was forwarded over the peer transport (`api.forwarded_publish`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from api.app_keys import CONFIG, METRICS, WALL_MS
from api.limits import check_message_headers
from api.validation import (
    bad,
    field_int,
    field_str,
    publish_object,
    published_delays,
    published_messages,
    published_priorities,
)
from cluster.config import NodeConfig
from cluster.queues.queue_door import QueueDoor
from cluster.replication.stored_message import StoredMessage


@dataclass(frozen=True, slots=True)
class PublishJob:
    """The messages (each with its optional expiration in ms), the publisher's id and seq, if any, each
    message's delay in ms when any message has one, and each one's priority when any has one."""

    messages: Sequence[tuple[StoredMessage, int | None]]
    publisher: str | None
    seq: int | None
    delays: Sequence[int | None] | None = None
    priorities: Sequence[int] | None = None

    async def run(self, app: web.Application, queue: QueueDoor) -> dict[str, Any]:
        """Publish on the queue's leader: the 201 answer's body once a majority has the messages."""
        started = time.perf_counter()
        published = await queue.publish(
            self.messages, self.publisher, self.seq, self.delays, priorities=self.priorities
        )
        metrics = app[METRICS]
        metrics.confirm_seconds.observe(time.perf_counter() - started)
        metrics.count_published(queue.name, len(published.ids))
        return {"ids": published.ids, "duplicate": published.duplicate}


async def read_publish(request: web.Request) -> PublishJob:
    """The publish a request's body asks for (JSON, or msgpack), within the node's limits."""
    return publish_of(await publish_object(request), request.app[CONFIG], request.app[WALL_MS]())


def publish_of(body: dict[str, Any], config: NodeConfig, now_ms: int) -> PublishJob:
    """The publish a publish body (`messages`, `publisher`, `seq`) asks for, within the node's limits;
    `now_ms` (the node's wall clock) turns a `not_before` into a delay."""
    unknown = set(body) - {"messages", "publisher", "seq"}
    if unknown:
        raise bad(f"unknown fields {sorted(unknown, key=str)}")
    messages = published_messages(body, config.max_message_bytes)
    for index, (message, _) in enumerate(messages):
        check_message_headers(index, message.headers, config)
    publisher = field_str(body, "publisher")
    seq = field_int(body, "seq", None)
    if (publisher is None) != (seq is None):
        raise bad("publisher and seq go together")
    delays = published_delays(body, now_ms)
    return PublishJob(messages, publisher, seq, delays, published_priorities(body))
