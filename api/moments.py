"""Points in time as the API takes them: epoch milliseconds or an ISO-8601 time."""

from __future__ import annotations

from datetime import UTC, datetime

from cluster.queue_limits import INT64_MAX


def epoch_ms(value: object) -> int:
    """Epoch milliseconds from a non-negative int or an ISO-8601 string (without a zone: UTC).

    Raises ValueError for anything else; times before the epoch count as 0."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT64_MAX:
        return value
    if isinstance(value, str):
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return max(0, int(moment.timestamp() * 1000))
    raise ValueError(f"expected epoch milliseconds or an ISO-8601 time, got {value!r}")
