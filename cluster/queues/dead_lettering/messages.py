"""Dead-letter metadata: the x-death history and first-death headers RabbitMQ users expect."""

from __future__ import annotations

from typing import Any

from cluster.replication.stored_message import StoredMessage, published_route
from metadata_state.vhost_names import name_in_vhost
from queue_state.effects import Delivery

DEATHS = "x-death"
"""The header of a dead letter's history: a message carrying it was dead-lettered."""


def with_death(
    headers: dict[str, Any], queue: str, reason: str, now_ms: int, reason_text: str | None = None
) -> dict[str, Any]:
    """Headers with this death in `queue` (the cluster's name of it) recorded: `x-death` counts per
    (queue, reason), newest first; the entry carries the newest death's `reason-text` (what a rejecting
    consumer said) when it has one. A new entry names, as RabbitMQ's does, the `exchange` and
    `routing-keys` the message had reached the queue by (`published_route`). The headers name the queue
    as its vhost does (`orders` for the cluster's `acme/orders`), as a publisher there named it."""
    queue = name_in_vhost(queue)
    deaths = [dict(d) for d in headers.get(DEATHS, []) if isinstance(d, dict)]
    for death in deaths:
        if death.get("queue") == queue and death.get("reason") == reason:
            death["count"] = int(death.get("count", 0)) + 1
            death["time"] = now_ms
            death.pop("reason-text", None)
            deaths.remove(death)
            deaths.insert(0, death)
            break
    else:
        exchange, routing_key = published_route(headers, queue)
        death = {
            "queue": queue,
            "reason": reason,
            "count": 1,
            "time": now_ms,
            "exchange": exchange,
            "routing-keys": [routing_key],
        }
        deaths.insert(0, death)
    if reason_text is not None:
        death["reason-text"] = reason_text
    updated = dict(headers)
    updated[DEATHS] = deaths
    updated.setdefault("x-first-death-queue", queue)
    updated.setdefault("x-first-death-reason", reason)
    return updated


def priorities_of(levels: list[int]) -> list[int] | None:
    """The priorities to publish dead letters with (each keeps its own), None when all are 0 (a publish
    without priorities, which every version reads)."""
    return levels if any(levels) else None


PUBLISH_BYTES = 8 * 1024 * 1024
"""The bodies one publish of dead letters carries at most (a larger letter goes alone): with their
headers, far within what one replicated operation may hold
(`cluster.replication.proposals.MAX_OPERATION_BYTES`), which a publish of many large letters would exceed,
refused for good."""


def publish_parts(sizes: list[int]) -> list[slice]:
    """Consecutive parts of letters of these body sizes, each publishing at most PUBLISH_BYTES of bodies
    (a larger letter alone), in order."""
    parts: list[slice] = []
    start = size = 0
    for end, body in enumerate(sizes):
        if end > start and size + body > PUBLISH_BYTES:
            parts.append(slice(start, end))
            start, size = end, 0
        size += body
    if start < len(sizes):
        parts.append(slice(start, len(sizes)))
    return parts


def dead_letter_messages(
    source: str,
    reason: str,
    held: list[tuple[Delivery, StoredMessage]],
    now_ms: int,
    reason_text: str | None = None,
) -> list[StoredMessage]:
    """The dead letters to route on, this death recorded, bodies untouched (copied out of the entries they
    were read from, which they would keep in memory while they wait)."""
    return [
        StoredMessage(bytes(m.body), with_death(m.headers, source, reason, now_ms, reason_text), m.encoding)
        for _, m in held
    ]
