"""The decisions of grow, shrink, rebalance and the quorum-critical check, from queue listings."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from cli.replica_plans import (
    Addition,
    grow_targets,
    grow_to_count_additions,
    leader_counts,
    quorum_critical,
    rebalance_moves,
    shrink_targets,
)

NODES = ["n1", "n2", "n3", "n4", "n5"]


def queue(name: str, members: list[str], leader: str | None = None) -> dict:
    return {"name": name, "members": members, "leader": leader or members[0]}


def test_grow_all_picks_matching_queues_without_the_node_and_even_picks_even_sizes() -> None:
    queues = [
        queue("a1", ["n1", "n2"]),
        queue("a2", ["n1", "n2", "n3"]),
        queue("b", ["n1"]),
        queue("a3", ["n4"]),
    ]
    assert [q["name"] for q in grow_targets(queues, "n4", "all", "^a")] == ["a1", "a2"]
    assert [q["name"] for q in grow_targets(queues, "n4", "even", None)] == ["a1"]


def test_shrink_picks_every_queue_with_a_replica_on_the_node() -> None:
    queues = [queue("x", ["n1", "n2"]), queue("y", ["n2", "n3"]), queue("z", ["n3"])]
    assert [q["name"] for q in shrink_targets(queues, "n2")] == ["x", "y"]


def test_node_is_quorum_critical_when_without_it_fewer_than_a_majority_stay_up() -> None:
    queues = [queue("three", ["n1", "n2", "n3"]), queue("five", NODES), queue("other", ["n4", "n5"])]
    up = {"n1", "n2", "n4", "n5"}  # n3 is down
    assert quorum_critical(queues, "n1", up) == [("/", "three")]
    assert quorum_critical(queues, "n4", up) == [("/", "other")]
    assert quorum_critical(queues, "n1", set(NODES)) == []


def test_rebalance_moves_leaders_off_the_node_that_holds_them_all() -> None:
    queues = [queue(f"q{i}", NODES, "n1") for i in range(7)]
    counts = Counter(leader_counts(queues, NODES))
    for move in rebalance_moves(queues, NODES):
        counts[move.source] -= 1
        counts[move.target] += 1
    assert max(counts.values()) == math.ceil(7 / 5)


@given(
    st.lists(
        st.tuples(st.sets(st.sampled_from(NODES), min_size=1), st.integers(0, 4)),
        max_size=12,
    ),
    st.sets(st.sampled_from(NODES), min_size=1),
)
def test_rebalance_moves_only_to_running_members_and_never_past_the_target(raw, running) -> None:  # type: ignore[no-untyped-def]
    queues = []
    for i, (members, pick) in enumerate(raw):
        ordered = sorted(members)
        queues.append(queue(f"q{i}", ordered, ordered[pick % len(ordered)]))
    running = sorted(running)
    target = math.ceil(len(queues) / len(running)) if queues else 0
    counts = Counter(leader_counts(queues, running))
    by_name = {q["name"]: q for q in queues}
    for move in rebalance_moves(queues, running):
        assert move.target in by_name[move.queue]["members"] and move.target in running
        assert counts[move.source] > target and counts[move.target] < target
        counts[move.source] -= 1
        counts[move.target] += 1


def test_grow_to_count_fills_each_queue_on_the_least_loaded_running_nodes() -> None:
    queues = [
        queue("a", ["n1"]),
        queue("b", ["n1", "n2"]),
        queue("c", ["n1", "n2", "n3"]),
        queue("x", ["n5"]),
    ]
    additions = grow_to_count_additions(queues, ["n1", "n2", "n3", "n4"], 3, "^[abc]$")
    assert additions == [Addition("a", "n4"), Addition("a", "n3"), Addition("b", "n4")]
    assert grow_to_count_additions([queue("a", ["n1"])], ["n1", "n2"], 5, None) == [Addition("a", "n2")]


@given(st.lists(st.sets(st.sampled_from(NODES), min_size=1), max_size=8), st.integers(1, 5))
def test_grow_to_count_reaches_the_count_or_every_running_node(member_sets, count) -> None:  # type: ignore[no-untyped-def]
    queues = [queue(f"q{i}", sorted(members)) for i, members in enumerate(member_sets)]
    running = NODES[:4]
    grown = {q["name"]: set(q["members"]) for q in queues}
    for addition in grow_to_count_additions(queues, running, count, None):
        assert addition.node in running and addition.node not in grown[addition.queue]
        grown[addition.queue].add(addition.node)
    for q in queues:
        members = grown[q["name"]]
        assert len(members) >= count or set(running) <= members
