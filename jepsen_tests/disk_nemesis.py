"""The `disk` nemesis: a node's disk, or every node's, fills up during the workload and frees again.

It sets the capacity of the victims' lazy filesystems (`lazy_state.py`) to what they hold now plus a
little room, less than the nodes' `disk_free_limit`, so statfs reports a nearly full disk and each
victim raises its disk alarm: publishes to its queues are refused with `resource_alarm` while
consumers drain. The heal lifts the capacity and the alarms clear by themselves. Variants: one random
node, the leader of a random queue, every node at once (replicas of one queue fill their disks
together).

The room left stays within the alarm's range rather than at zero, so that publishes fail only with
`resource_alarm`. A disk filled to the last byte (a failed write stops the node until it has room,
decision 0025) is checked by `tests/jepsen/test_failed_write.py`, not yet drawn in schedules.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.fault import ActiveFault, pick_victims

MIB = 1 << 20
ROOM_LEFT = (8 * MIB, 16 * MIB, 32 * MIB)  # all under the default disk_free_limit of 50 MB


class DiskNemesis:
    """Fills the disks of a random node, a queue leader or every node, leaving a little room."""

    name = "disk"
    variants = ("random-node", "leader", "all")
    needs_lazy_fs = True

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        variant = rng.choice(self.variants)
        victims = pick_victims(cluster, queues, rng, variant)
        room = rng.choice(ROOM_LEFT)
        filled: list[str] = []

        def unfill() -> None:
            for name in victims[: len(filled)]:
                cluster.unfill_disk(name)

        try:
            for name in victims:
                filled.append(f"{name} at {cluster.fill_disk(name, room)['capacity']} B")
        except BaseException:
            unfill()  # no disk stays full for a fault that was never started
            raise

        description = f"disk full but {room // MIB} MiB: {', '.join(filled)}"
        return ActiveFault(self.name, variant, victims, description, unfill)
