"""What a fault is: the ActiveFault a nemesis returns, the Nemesis protocol, and how victims are picked."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from jepsen_tests.cluster import JepsenCluster


@dataclass
class ActiveFault:
    """A fault in force: its family, variant, the nodes it hit, a description and how to undo it."""

    nemesis: str
    kind: str
    nodes: list[str]
    description: str
    heal: Callable[[], None] = field(repr=False)

    def record(self) -> dict[str, Any]:
        """The fault as a nemesis-log entry."""
        return {
            "nemesis": self.nemesis,
            "kind": self.kind,
            "nodes": self.nodes,
            "description": self.description,
        }


class Nemesis(Protocol):
    """A family of faults."""

    name: str

    def inject(self, cluster: JepsenCluster, queues: Sequence[str], rng: random.Random) -> ActiveFault:
        """Start one fault of this family and return it."""
        ...


def pick_victims(
    cluster: JepsenCluster, queues: Sequence[str], rng: random.Random, variant: str
) -> list[str]:
    """The nodes a node-level fault hits: one random node, a queue's current leader, a minority, or all."""
    names = cluster.names
    if variant == "leader":
        leader = cluster.queue_leader(rng.choice(list(queues)))
        return [leader] if leader in names else [rng.choice(names)]
    if variant == "minority":
        return sorted(rng.sample(names, max(1, (len(names) - 1) // 2)))
    if variant == "all":
        return list(names)
    return [rng.choice(names)]
