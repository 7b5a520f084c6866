"""The frame of a publish forwarded to a queue's leader over the peer transport (`api.publishing`).

`["publish", queue, user, hops, publisher, seq, [[body, headers, encoding, expiration], ...]]`, and,
when a message has a delay, the delays as an eighth element (only once every node reads queue
operations version 5); when a message has a priority, the priorities as a ninth, the eighth then None
without delays (version 6); when the publish waits for room in a full queue, its wait in ms as a tenth,
the eighth and ninth then None when there are none (a leader of an earlier version refuses it, 400).
`user` is the caller the forwarding node vouches for.
"""

from __future__ import annotations

from typing import Any

from api.publish_job import PublishJob
from api.validation import ENCODINGS, bad
from cluster.queues.queue_limits import INT64_MAX, MAX_PUBLISH_WAIT_MS, MESSAGE_PRIORITY_MAX
from cluster.replication.stored_message import StoredMessage

PUBLISH = "publish"


def publish_frame(name: str, user: str, hops: int, job: PublishJob) -> list[Any]:
    """The frame forwarding `job` to queue `name` for `user`, after `hops` nodes."""
    messages = [[m.body, m.headers, m.encoding, expiration] for m, expiration in job.messages]
    frame = [PUBLISH, name, user, hops, job.publisher, job.seq, messages]
    if (
        job.delays is not None or job.priorities is not None or job.wait_ms
    ):  # only to a leader that reads them
        frame.append(None if job.delays is None else list(job.delays))
    if job.priorities is not None or job.wait_ms:
        frame.append(None if job.priorities is None else list(job.priorities))
    if job.wait_ms:
        frame.append(job.wait_ms)
    return frame


def decode_frame(request: Any) -> tuple[str, str, int, PublishJob]:
    """The queue, user, hops and publish of a forwarded publish; 400 when it is not one."""
    try:
        tag, name, user, hops, publisher, seq, messages, *more = request
        delays = more[0] if more else None
        priorities = more[1] if len(more) > 1 else None
        wait_ms = more[2] if len(more) > 2 else 0
        stored = [
            (StoredMessage(body, headers, encoding), expires) for body, headers, encoding, expires in messages
        ]
    except (TypeError, ValueError) as exc:
        raise bad(f"malformed forwarded publish: {exc}") from exc
    well_formed = (
        tag == PUBLISH
        and isinstance(name, str)
        and isinstance(user, str)
        and type(hops) is int
        and (publisher is None) == (seq is None)
        and (publisher is None or isinstance(publisher, str))
        and (seq is None or _is_int64(seq))
        and all(_well_formed(message, expires) for message, expires in stored)
        and len(more) <= 3
        and (delays is None or _well_formed_delays(delays, len(stored)))
        and (priorities is None or _well_formed_priorities(priorities, len(stored)))
        and type(wait_ms) is int
        and 0 <= wait_ms <= MAX_PUBLISH_WAIT_MS
    )
    if not well_formed:
        raise bad("malformed forwarded publish")
    return name, user, hops, PublishJob(stored, publisher, seq, delays, priorities, wait_ms)


def _well_formed_delays(delays: Any, count: int) -> bool:
    return (
        isinstance(delays, list)
        and len(delays) == count
        and all(d is None or (_is_int64(d) and d > 0) for d in delays)
    )


def _well_formed_priorities(priorities: Any, count: int) -> bool:
    return (
        isinstance(priorities, list)
        and len(priorities) == count
        and all(type(p) is int and 0 <= p <= MESSAGE_PRIORITY_MAX for p in priorities)
    )


def _well_formed(message: StoredMessage, expires: Any) -> bool:
    """Whether a forwarded message has the types `read_publish` gives (what the log stores)."""
    return (
        isinstance(message.body, bytes)
        and isinstance(message.headers, dict)
        and all(isinstance(key, str) for key in message.headers)
        and message.encoding in ENCODINGS
        and (expires is None or _is_int64(expires))
    )


def _is_int64(value: Any) -> bool:
    return type(value) is int and 0 <= value <= INT64_MAX
