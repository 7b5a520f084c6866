"""The `clock` nemesis: one node's wall clock skewed or jumped by seconds to hours (libfaketime).

The victim is a random node or the leader of a random queue. Variants: `forward-small` and
`backward-small` (5-120 s), `forward-hours` and `backward-hours` (1-24 h), and `jump` (forward by
hours, then JUMP_BACK_AFTER_S later as far backward). Healed by setting the clock right again. Only
the wall clock moves: the monotonic clock is untouched, as when NTP steps a clock or a VM resumes.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence

from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.fault import ActiveFault, pick_victims

HOUR_S = 3600
JUMP_BACK_AFTER_S = 1.5


class ClockNemesis:
    """Skews one node's wall clock; needs a cluster started with fake clocks."""

    name = "clock"
    variants = ("forward-small", "forward-hours", "backward-small", "backward-hours", "jump")

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        clocks = cluster.clocks
        if clocks is None:
            raise RuntimeError("the clock nemesis needs a cluster started with FakeClocks")
        variant = rng.choice(self.variants)
        victim = pick_victims(cluster, queues, rng, rng.choice(("random-node", "leader")))[0]
        hours = variant.endswith("hours") or variant == "jump"
        seconds = rng.randint(HOUR_S, 24 * HOUR_S) if hours else rng.randint(5, 120)
        seconds = -seconds if variant.startswith("backward") else seconds
        clocks.shift(victim, seconds)
        description = f"{victim} wall clock {seconds:+d}s"
        jump_back = None
        if variant == "jump":
            jump_back = threading.Timer(JUMP_BACK_AFTER_S, clocks.shift, (victim, -seconds))
            jump_back.start()
            description += f", then {-seconds:+d}s after {JUMP_BACK_AFTER_S}s"

        def heal() -> None:
            if jump_back is not None:
                jump_back.cancel()
                jump_back.join()
            clocks.shift(victim, 0)

        return ActiveFault(self.name, variant, [victim], description, heal)
