"""Points in time as the HTTP API takes them (`since`): epoch milliseconds or an ISO-8601 time.

Part of the protocol, so the client and the server read a moment alike (the server's request parsing
imports it from here)."""

from __future__ import annotations

from datetime import UTC, datetime

MAX_MS = 2**63 - 1
"""The latest moment the protocol carries (a signed 64-bit integer)."""


def epoch_ms(value: object) -> int:
    """Epoch milliseconds from a non-negative int or an ISO-8601 string (without a zone: UTC).

    Raises ValueError for anything else; times before the epoch count as 0."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_MS:
        return value
    if isinstance(value, str):
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return max(0, int(moment.timestamp() * 1000))
    raise ValueError(f"expected epoch milliseconds or an ISO-8601 time, got {value!r}")
