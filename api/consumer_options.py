"""What a new consumer asks for (`POST /api/queues/{q}/consumers`, a `consume` on the stream), read and
checked in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.validation import bad, field_bool, field_int, field_since

DEFAULT_PREFETCH = 100
MAX_PREFETCH = 65535
FIELDS = frozenset({"prefetch", "priority", "timeout", "since", "auto_ack"})


@dataclass(frozen=True, slots=True)
class ConsumerOptions:
    """A consumer's credit, priority, consumer timeout (ms, None: the queue's, else the node's), start
    time (epoch ms) and whether what it is handed is settled as it is handed out (AMQP's no-ack)."""

    prefetch: int
    priority: int
    timeout_ms: int | None
    since_ms: int | None
    auto_ack: bool = False


def consumer_options(body: dict[str, Any], allowed: frozenset[str] = FIELDS) -> ConsumerOptions:
    """The options `body` gives (400 for a field outside `allowed` or a bad value)."""
    unknown = set(body) - allowed
    if unknown:
        raise bad(f"unknown fields {sorted(unknown, key=str)}")
    prefetch = field_int(body, "prefetch", DEFAULT_PREFETCH, minimum=1)
    priority = field_int(body, "priority", 0, minimum=-(2**31))
    timeout = field_int(body, "timeout", None, minimum=1)
    assert prefetch is not None and priority is not None
    if prefetch > MAX_PREFETCH:
        raise bad(f"prefetch must be <= {MAX_PREFETCH}")
    auto_ack = field_bool(body, "auto_ack", False)
    return ConsumerOptions(prefetch, priority, timeout, field_since(body), auto_ack)
