"""Partition shapes: who drops whom, for each shape RabbitMQ's Jepsen run uses plus bridge and one-way."""

from __future__ import annotations

import random

import pytest

from jepsen_tests.partitions import SHAPES, Partition, shapes_for

FIVE = [f"node{i}" for i in range(1, 6)]
THREE = FIVE[:3]


def sees(partition: Partition, a: str, b: str) -> bool:
    """a and b can talk over TCP only when neither drops the other."""
    return b not in partition.grudge[a] and a not in partition.grudge[b]


def components(partition: Partition, nodes: list[str]) -> list[set[str]]:
    return [{b for b in nodes if b == a or sees(partition, a, b)} for a in nodes]


@pytest.mark.parametrize("shape", ["random-halves", "halves"])
def test_halves_split_the_nodes_into_a_minority_and_a_majority(shape: str) -> None:
    partition = SHAPES[shape](FIVE, random.Random(3))
    sizes = sorted({len(c) for c in components(partition, FIVE)})
    assert sizes == [2, 3]
    assert all(
        sees(partition, a, b) == (b in c)
        for a, c in zip(FIVE, components(partition, FIVE), strict=True)
        for b in FIVE
    )


def test_fixed_halves_are_the_same_whatever_the_seed() -> None:
    assert SHAPES["halves"](FIVE, random.Random(1)) == SHAPES["halves"](FIVE, random.Random(2))


def test_majorities_ring_gives_every_node_a_different_majority() -> None:
    partition = SHAPES["majorities-ring"](FIVE, random.Random(7))
    views = [frozenset(c) for c in components(partition, FIVE)]
    assert all(len(v) == 3 for v in views)
    assert len(set(views)) == 5


def test_majorities_ring_is_not_offered_on_three_nodes() -> None:
    assert "majorities-ring" not in shapes_for(3)
    with pytest.raises(ValueError):
        SHAPES["majorities-ring"](THREE, random.Random(1))


def test_random_node_isolates_exactly_one_node() -> None:
    partition = SHAPES["random-node"](FIVE, random.Random(5))
    lonely = [n for n in FIVE if len(partition.grudge[n]) == 4]
    assert len(lonely) == 1
    assert all(partition.grudge[n] == {lonely[0]} for n in FIVE if n != lonely[0])


def test_bridge_node_sees_both_halves_which_do_not_see_each_other() -> None:
    partition = SHAPES["bridge"](FIVE, random.Random(11))
    bridge = next(n for n in FIVE if not partition.grudge[n])
    assert all(sees(partition, bridge, n) for n in FIVE)
    others = [n for n in FIVE if n != bridge]
    cut_pairs = {(a, b) for a in others for b in others if a < b and not sees(partition, a, b)}
    assert len(cut_pairs) == 4  # two halves of two: every cross pair is cut


def test_one_way_cuts_a_single_direction() -> None:
    for seed in range(20):
        partition = SHAPES["one-way"](FIVE, random.Random(seed))
        droppers = [n for n in FIVE if partition.grudge[n]]
        target_hears_nobody = len(droppers) == 1
        if target_hears_nobody:
            assert len(partition.grudge[droppers[0]]) == 4
        else:
            (target,) = set().union(*(partition.grudge[n] for n in droppers))
            assert not partition.grudge[target]
            assert len(droppers) == 4


@pytest.mark.parametrize("shape", shapes_for(5))
def test_every_shape_cuts_something_and_never_a_node_from_itself(shape: str) -> None:
    for nodes in [FIVE] if shape == "majorities-ring" else [THREE, FIVE]:
        partition = SHAPES[shape](nodes, random.Random(0))
        assert any(partition.grudge.values())
        assert all(n not in partition.grudge[n] for n in nodes)


@pytest.mark.parametrize("shape", shapes_for(5))
def test_shapes_are_reproducible_from_the_seed(shape: str) -> None:
    assert SHAPES[shape](FIVE, random.Random(42)) == SHAPES[shape](FIVE, random.Random(42))
