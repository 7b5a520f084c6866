"""The `disk` nemesis: a node's disk, or every node's, fills up during the workload and frees again.

It sets the capacity of the victims' lazy filesystems (`lazy_state.py`) to what they hold now plus a
little room, so statfs reports a nearly full disk. Victims: one random node, the leader of a random
queue, or every node at once (replicas of one queue fill their disks together). The heal lifts the
capacity.

Most faults leave 8, 16 or 32 MiB of room, less than the nodes' `disk_free_limit`: each victim raises
its disk alarm, publishes to its queues are held back and refused with `resource_alarm` while consumers
drain, and the alarms clear by themselves after the heal. The checker holds publishes during these
faults to that (`disk_refusals.py`).

One fault in four leaves no room at all (kind `<victims>-last-byte`): a victim's next write fails, and
the node stops and starts again in its process (decision 0025): it gives back its ballast and serves on,
or, with none left, answers 503 `resource_alarm` until the heal gives it room. Clients see what a
restart shows them, so the checker judges these faults by loss and duplicates only.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.fault import ActiveFault, pick_victims

MIB = 1 << 20
ROOM_LEFT = (8 * MIB, 16 * MIB, 32 * MIB)  # all under the default disk_free_limit of 50 MB
LAST_BYTE = "last-byte"


def holds_back(kind: str) -> bool:
    """Whether a disk fault of `kind` leaves room in the alarm's range (publishes are held back and
    refused with `resource_alarm`) rather than none (the victims' writes fail)."""
    return not kind.endswith(LAST_BYTE)


class DiskNemesis:
    """Fills the disks of a random node, a queue leader or every node, leaving a little room or none."""

    name = "disk"
    variants = ("random-node", "leader", "all")
    needs_lazy_fs = True

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        variant = rng.choice(self.variants)
        victims = pick_victims(cluster, queues, rng, variant)
        room = 0 if rng.random() < 0.25 else rng.choice(ROOM_LEFT)
        kind = variant if room else f"{variant}-{LAST_BYTE}"
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

        left = f"but {room // MIB} MiB" if room else "to the last byte"
        description = f"disk full {left}: {', '.join(filled)}"
        return ActiveFault(self.name, kind, victims, description, unfill)
