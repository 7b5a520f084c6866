"""Partition shapes as grudges (node → nodes whose packets it drops), the ones RabbitMQ's Jepsen run uses
(random halves, fixed halves, majorities ring, one random node isolated) plus bridge and one-way.

Pure functions of the node names and a seeded Random, so a schedule is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Partition:
    """A named shape, its grudge and a short description of who sees whom."""

    shape: str
    grudge: dict[str, frozenset[str]]
    description: str


def grudge_from_components(
    nodes: Sequence[str], components: Iterable[Iterable[str]]
) -> dict[str, frozenset[str]]:
    """Each node drops every node it shares no component with (a node may sit in several: a bridge)."""
    components = [set(c) for c in components]
    grudge = {}
    for node in nodes:
        visible = set().union(*(c for c in components if node in c))
        grudge[node] = frozenset(set(nodes) - visible - {node})
    return grudge


def _halves(members: Sequence[str]) -> tuple[list[str], list[str]]:
    """The smaller half first (for an odd count) and the rest."""
    middle = len(members) // 2
    return list(members[:middle]), list(members[middle:])


def _show(*groups: Iterable[str]) -> str:
    return " | ".join(",".join(sorted(g)) for g in groups)


def random_halves(nodes: Sequence[str], rng: random.Random) -> Partition:
    """A random minority cut from the majority."""
    minority, majority = _halves(rng.sample(list(nodes), len(nodes)))
    return Partition(
        "random-halves", grudge_from_components(nodes, [minority, majority]), _show(minority, majority)
    )


def fixed_halves(nodes: Sequence[str], rng: random.Random) -> Partition:
    """The first half of the sorted nodes cut from the second (the same cut every time)."""
    first, second = _halves(sorted(nodes))
    return Partition("halves", grudge_from_components(nodes, [first, second]), _show(first, second))


def majorities_ring(nodes: Sequence[str], rng: random.Random) -> Partition:
    """Nodes on a random ring each see only their ring neighbourhood: a majority, a different one each.

    Needs at least 5 nodes (on 3 every neighbourhood is the whole cluster)."""
    if len(nodes) < 5:
        raise ValueError("a majorities ring needs at least 5 nodes")
    ring = rng.sample(list(nodes), len(nodes))
    reach = (len(nodes) // 2 + 1) // 2
    views = [{ring[(i + k) % len(ring)] for k in range(-reach, reach + 1)} for i in range(len(ring))]
    grudge = {ring[i]: frozenset(set(nodes) - view) for i, view in enumerate(views)}
    return Partition("majorities-ring", grudge, "ring " + "-".join(ring))


def isolate_random_node(nodes: Sequence[str], rng: random.Random) -> Partition:
    """One random node cut from all the others."""
    lonely = rng.choice(sorted(nodes))
    rest = [n for n in nodes if n != lonely]
    return Partition("random-node", grudge_from_components(nodes, [[lonely], rest]), _show([lonely], rest))


def bridge(nodes: Sequence[str], rng: random.Random) -> Partition:
    """Two halves that cannot see each other, and one bridge node that sees both."""
    shuffled = rng.sample(list(nodes), len(nodes))
    middle, rest = shuffled[0], shuffled[1:]
    left, right = _halves(rest)
    grudge = grudge_from_components(nodes, [[*left, middle], [*right, middle]])
    return Partition("bridge", grudge, f"{_show(left)} <- {middle} -> {_show(right)}")


def one_way(nodes: Sequence[str], rng: random.Random) -> Partition:
    """Asymmetric: one node hears nobody (inbound cut) or nobody hears it (outbound cut)."""
    target = rng.choice(sorted(nodes))
    others = frozenset(n for n in nodes if n != target)
    if rng.random() < 0.5:
        grudge: dict[str, frozenset[str]] = {n: frozenset() for n in others} | {target: others}
        return Partition("one-way", grudge, f"{target} hears nobody")
    grudge = {n: frozenset({target}) for n in others} | {target: frozenset()}
    return Partition("one-way", grudge, f"nobody hears {target}")


PartitionShape = Callable[[Sequence[str], random.Random], Partition]

SHAPES: dict[str, PartitionShape] = {
    "random-halves": random_halves,
    "halves": fixed_halves,
    "majorities-ring": majorities_ring,
    "random-node": isolate_random_node,
    "bridge": bridge,
    "one-way": one_way,
}


def shapes_for(node_count: int) -> list[str]:
    """The shape names that cut something on a cluster of `node_count` nodes."""
    return [name for name in SHAPES if name != "majorities-ring" or node_count >= 5]
