"""Latency percentiles from samples in seconds."""

from __future__ import annotations

import math
from collections.abc import Sequence

PERCENTILES = (50.0, 99.0, 99.9)


def percentile(sorted_samples: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile of already sorted samples (NaN when there are none)."""
    if not sorted_samples:
        return math.nan
    rank = max(1, math.ceil(round(pct * len(sorted_samples) / 100, 9)))  # round away float noise
    return sorted_samples[rank - 1]


def latency_ms(samples: Sequence[float]) -> dict[str, float]:
    """p50/p99/p999 in milliseconds of latency samples given in seconds."""
    ordered = sorted(samples)
    return {f"p{pct:g}".replace(".", ""): percentile(ordered, pct) * 1000 for pct in PERCENTILES}
