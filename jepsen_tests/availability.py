"""Availability from the history: for every fault, how long publishing stopped.

A publish *resumes* at time t when a publish invoked at or after t is confirmed (`ok`), through any node
by any publisher; the gap from t is that confirm's completion time minus t, for the earliest such
confirm. Counting only publishes invoked at or after t keeps a publish sent just before the fault (and
confirmed just after it started) from hiding the stall. Each fault has two gaps:

- `from_start`: t = the fault's start (logged once it is in force);
- `from_heal`: t = its heal (logged once healed).

A gap is None when no publish invoked after t was confirmed before the workload ended. With ~160
publishes/s across the publishers, a fault that does not stop publishing gives a gap of a few tens of
milliseconds (the next invoke plus one confirm).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jepsen_tests.history import Op
from jepsen_tests.nemesis_log import FaultSpan


@dataclass(frozen=True)
class PublishGap:
    """How long after a fault's start and after its heal the next publish invoked then was confirmed."""

    fault: FaultSpan
    from_start: float | None
    from_heal: float | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "nemesis": self.fault.nemesis,
            "kind": self.fault.kind,
            "start": self.fault.start,
            "stop": self.fault.end,
            "from_start": self.from_start,
            "from_heal": self.from_heal,
        }

    def summary(self) -> str:
        """E.g. "publishing resumed 1.23 s after the start, 0.04 s after the heal"."""
        start, heal = _seconds(self.from_start), _seconds(self.from_heal)
        return f"publishing resumed {start} after the start, {heal} after the heal"


def publish_latencies(history: Sequence[Op]) -> list[tuple[float, float, str]]:
    """(invoke time, seconds until completion, completion type) of every completed enqueue."""
    invoked: dict[tuple[str, int | None], float] = {}
    latencies: list[tuple[float, float, str]] = []
    for op in history:
        if op.f != "enqueue":
            continue
        key = (op.process, op.value)
        if op.type == "invoke":
            invoked[key] = op.time
        elif key in invoked:
            start = invoked.pop(key)
            latencies.append((start, op.time - start, op.type))
    return latencies


def publish_gaps(history: Sequence[Op], faults: Sequence[FaultSpan]) -> list[PublishGap]:
    """The publish gap from the start and from the heal of every fault."""
    confirms = sorted(
        (start, start + took) for start, took, type_ in publish_latencies(history) if type_ == "ok"
    )
    invokes = [invoked for invoked, _ in confirms]
    earliest_after = [float("inf")] * (len(confirms) + 1)  # earliest confirm among confirms[i:]
    for i in range(len(confirms) - 1, -1, -1):
        earliest_after[i] = min(confirms[i][1], earliest_after[i + 1])

    def gap(since: float) -> float | None:
        confirmed = earliest_after[bisect.bisect_left(invokes, since)]
        return None if confirmed == float("inf") else round(confirmed - since, 4)

    return [PublishGap(fault, gap(fault.start), gap(fault.end)) for fault in faults]


def _seconds(gap: float | None) -> str:
    return "never (before the workload ended)" if gap is None else f"{gap:.2f} s"
