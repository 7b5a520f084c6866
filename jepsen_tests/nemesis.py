"""Nemeses: what a fault does to the cluster and how it is healed, in a registry by family name.

A nemesis picks its variant and its victims with the Random it is given (seeded per fault window, so a
schedule is reproducible up to who leads at the time) and returns the ActiveFault to heal later. A new
family is one class with `name` and `inject`, added to NEMESES.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from jepsen_tests.client_nemesis import ClientNemesis
from jepsen_tests.clock_nemesis import ClockNemesis
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.corrupt_nemesis import CorruptNemesis
from jepsen_tests.disk_nemesis import DiskNemesis
from jepsen_tests.fault import ActiveFault, Nemesis, pick_victims
from jepsen_tests.network_faults import apply_grudge, degrade_link, heal_partitions, restore_link
from jepsen_tests.partitions import SHAPES, shapes_for
from jepsen_tests.power_nemesis import PowerNemesis


class PartitionNemesis:
    """Drops packets between nodes in one of the partition shapes; heals by flushing every drop rule."""

    name = "partition"

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        shape = rng.choice(shapes_for(len(cluster.names)))
        partition = SHAPES[shape](cluster.names, rng)
        apply_grudge(cluster.hosts, partition.grudge)
        cut = sorted(node for node, dropped in partition.grudge.items() if dropped)
        return ActiveFault(
            self.name, shape, cut, partition.description, lambda: heal_partitions(cluster.hosts)
        )


class KillNemesis:
    """SIGKILLs a random node, a queue leader, a minority or every node; heals by restarting them."""

    name = "kill"
    variants = ("random-node", "leader", "minority", "all")

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        variant = rng.choice(self.variants)
        victims = pick_victims(cluster, queues, rng, variant)
        for name in victims:
            cluster.kill(name)

        def restart() -> None:
            for name in victims:
                cluster.restart(name)

        return ActiveFault(self.name, variant, victims, f"SIGKILL {','.join(victims)}", restart)


class PauseNemesis:
    """SIGSTOPs a random node, a queue leader or a minority; heals with SIGCONT."""

    name = "pause"
    variants = ("random-node", "leader", "minority")

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        variant = rng.choice(self.variants)
        victims = pick_victims(cluster, queues, rng, variant)
        for name in victims:
            cluster.pause(name)

        def resume() -> None:
            for name in victims:
                cluster.resume(name)

        return ActiveFault(self.name, variant, victims, f"SIGSTOP {','.join(victims)}", resume)


class NetemNemesis:
    """Slows down and drops the packets of one node or of all (netem or a fallback); heals by undoing it."""

    name = "netem"
    variants = ("random-node", "all")

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        variant = rng.choice(self.variants)
        victims = pick_victims(cluster, queues, rng, variant)
        delay_ms, jitter_ms, loss = rng.randint(20, 300), rng.randint(0, 50), rng.choice((0, 1, 5, 10, 20))
        done = [degrade_link(cluster.host(name), delay_ms, jitter_ms, loss) for name in victims]

        def clear() -> None:
            for name in victims:
                restore_link(cluster.host(name))

        return ActiveFault(self.name, variant, victims, f"{done[0]} on {','.join(victims)}", clear)


class MembershipNemesis:
    """Changes a queue's replica set while other faults run: grows it onto a node holding no replica
    (healed by removing that replica) or removes a replica (healed by adding it back). A change the
    cluster refuses (no quorum, another change running, a node down) is logged, never fatal: refusing
    is the right answer during some faults."""

    name = "membership"

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        queue = rng.choice(list(queues))
        members = cluster.queue_members(queue) or list(cluster.names)
        outside = [n for n in cluster.names if n not in members]
        add = bool(outside) and rng.random() < 0.5
        node = rng.choice(outside if add else members)
        outcome = cluster.change_member(queue, node, add=add)
        kind = "add" if add else "remove"

        def undo() -> None:
            if outcome == "ok":
                cluster.change_member(queue, node, add=not add)

        return ActiveFault(self.name, kind, [node], f"{kind} replica of {queue} on {node}: {outcome}", undo)


NEMESES: dict[str, Nemesis] = {
    nemesis.name: nemesis
    for nemesis in (
        PartitionNemesis(),
        KillNemesis(),
        PauseNemesis(),
        NetemNemesis(),
        MembershipNemesis(),
        CorruptNemesis(),
        ClockNemesis(),
        ClientNemesis(),
        PowerNemesis(),
        DiskNemesis(),
    )
}


def nemeses_named(names: Sequence[str]) -> list[Nemesis]:
    """The registered nemeses for comma-separated family names; ValueError names an unknown one."""
    unknown = [n for n in names if n not in NEMESES]
    if unknown:
        raise ValueError(f"unknown nemesis {', '.join(unknown)}; known: {', '.join(NEMESES)}")
    return [NEMESES[n] for n in names]
