"""The nemesis log: one JSON line per fault started or healed, timed like the history."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class FaultSpan:
    """When one fault was in force, for reports and plots."""

    start: float
    end: float
    nemesis: str
    kind: str
    description: str


class NemesisLog:
    """Appends nemesis events to `path`, stamped with `clock()` (seconds since the run started)."""

    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        self.path = path
        self.clock = clock

    def write(self, event: str, **fields: Any) -> None:
        """Append one event (e.g. "start", "stop", "heal-all") with its fields."""
        line = json.dumps({"time": round(self.clock(), 4), "event": event, **fields}, separators=(",", ":"))
        with self.path.open("a", encoding="utf-8") as log:
            log.write(line + "\n")


def read_fault_spans(path: Path) -> list[FaultSpan]:
    """Pair each window's start and stop events into spans (an unstopped one ends at the last event)."""
    if not path.exists():
        return []
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    last = max((e["time"] for e in events), default=0.0)
    starts = {e["window"]: e for e in events if e["event"] == "start"}
    stops = {e["window"]: e["time"] for e in events if e["event"] == "stop"}
    return [
        FaultSpan(e["time"], stops.get(w, last), e["nemesis"], e["kind"], e["description"])
        for w, e in sorted(starts.items())
    ]
