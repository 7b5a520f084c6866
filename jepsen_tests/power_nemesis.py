"""The `power` nemesis: nodes lose power, so everything they had not fsynced is gone.

A power fault SIGKILLs its victims and discards the unsynced state of their lazy filesystems (data,
names and renames not fsynced; see `lazy_state.py`), as a machine that loses power loses its page
cache. Variants: one random node, the leader of a random queue, a minority, all nodes at once (each
restarted when the window ends, like `kill`), and `rolling`: every node in turn is powered off and
restarted, and the next one goes only once it is healthy again, all within the fault itself.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from cli.node_processes import wait_healthy
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.fault import ActiveFault, pick_victims

ROLLING_HEALTHY_TIMEOUT_S = 60.0


def lost_text(name: str, lost: dict[str, int]) -> str:
    """What one node's power failure dropped, for the nemesis log."""
    return (
        f"{name} lost {lost['dirty_bytes']} B unsynced in {lost['unsynced_files']} files"
        f" and {lost['unsynced_entries']} unsynced entries"
    )


class PowerNemesis:
    """Powers off a random node, a queue leader, a minority, every node, or each node in turn."""

    name = "power"
    variants = ("random-node", "leader", "minority", "all", "rolling")
    needs_lazy_fs = True

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        variant = rng.choice(self.variants)
        if variant == "rolling":
            order = rng.sample(cluster.names, len(cluster.names))
            lost = []
            for name in order:
                lost.append(lost_text(name, cluster.power_off(name)))
                cluster.restart(name)
                wait_healthy([cluster.node(name)], ROLLING_HEALTHY_TIMEOUT_S)
            return ActiveFault(self.name, variant, order, "; ".join(lost), lambda: None)
        victims = pick_victims(cluster, queues, rng, variant)
        lost = [lost_text(name, cluster.power_off(name)) for name in victims]

        def restart() -> None:
            for name in victims:
                cluster.restart(name)

        return ActiveFault(self.name, variant, victims, "; ".join(lost), restart)
