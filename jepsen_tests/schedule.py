"""A reproducible fault schedule: alternating quiet gaps and fault windows, drawn from the seed."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

QUIET_S = (2.0, 5.0)
FAULT_S = (3.0, 8.0)
SETTLE_S = 2.0


@dataclass(frozen=True)
class FaultWindow:
    """The `index`-th fault: which nemesis family, from `start` to `end` seconds into the workload."""

    index: int
    start: float
    end: float
    nemesis: str

    def rng(self, seed: int) -> random.Random:
        """The Random this window's nemesis draws its variant and victims from."""
        return random.Random(f"{seed}/{self.index}")


def plan_schedule(seed: int, duration: float, nemeses: Sequence[str]) -> list[FaultWindow]:
    """Fault windows (one at a time) filling `duration` seconds, each healed `SETTLE_S` before the end."""
    if not nemeses:
        return []
    rng = random.Random(seed)
    windows: list[FaultWindow] = []
    now = rng.uniform(*QUIET_S)
    while True:
        end = now + rng.uniform(*FAULT_S)
        if end > duration - SETTLE_S:
            return windows
        windows.append(FaultWindow(len(windows), round(now, 2), round(end, 2), rng.choice(list(nemeses))))
        now = end + rng.uniform(*QUIET_S)
