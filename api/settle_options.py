"""What an ack, a nack or a touch asks for (`POST .../ack`, `.../nack` and `.../touch`, an `ack`,
`nack` or `touch` frame on the stream), read and checked in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.validation import bad, field_bool, field_int, field_str, message_ids
from cluster.queues.queue_limits import MAX_REASON_CHARS
from cluster.queues.queue_results import Outcome

FIELDS = {
    "ack": frozenset({"ids"}),
    "nack": frozenset({"ids", "requeue", "failed", "reason", "delay"}),
    "touch": frozenset({"ids"}),
}


@dataclass(frozen=True, slots=True)
class SettleOptions:
    """The ids to settle and how: a nack that requeues counts a failed delivery unless `failed` is
    false (a plain return) and may wait `delay_ms` before it is ready again; one that does not (a reject)
    may give a `reason`, kept with the dead letter."""

    ids: tuple[int, ...]
    outcome: Outcome
    failed: bool = True
    reason: str | None = None
    delay_ms: int | None = None


def settle_options(body: dict[str, Any], op: str) -> SettleOptions:
    """The options of an `ack` or `nack` body (400 for a bad value, or a reason on a nack that requeues)."""
    ids = message_ids(body)
    if op == "ack":
        return SettleOptions(ids, Outcome.ACK)
    requeue = field_bool(body, "requeue", True)
    failed = field_bool(body, "failed", True)
    reason = field_str(body, "reason")
    delay = field_int(body, "delay", None, minimum=0)
    if reason is not None:
        if requeue:
            raise bad("reason goes with a nack that does not requeue: it is kept with the dead letter")
        if len(reason) > MAX_REASON_CHARS:
            raise bad(f"reason must be at most {MAX_REASON_CHARS} characters, got {len(reason)}")
    if delay is not None and not requeue:
        raise bad("delay goes with a nack that requeues: the message waits that long before it is ready")
    return SettleOptions(ids, Outcome.REQUEUE if requeue else Outcome.DISCARD, failed, reason, delay)


def touch_ids(body: dict[str, Any]) -> tuple[int, ...]:
    """The ids a touch extends the hold of (400 for another field or a bad id)."""
    unknown = set(body) - FIELDS["touch"]
    if unknown:
        raise bad(f"unknown fields {sorted(unknown, key=str)}")
    return message_ids(body)


def touch_answer(hold_ms: int, warning: str | None) -> dict[str, Any]:
    """The answer to a touch: how long the touched messages may now be held without another touch (ms),
    and which ids were not held (a warning, as for a settle)."""
    return {"ok": True, "hold_ms": hold_ms} | ({} if warning is None else {"warning": warning})
