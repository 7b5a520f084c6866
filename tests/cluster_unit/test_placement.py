"""Placement keeps a queue's replicas on distinct hosts when several nodes share one (decision 0015)."""

from __future__ import annotations

import functools
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from cluster.hosts import host_of
from cluster.queues.placement import next_replica, place_replicas
from metadata_state.records import NodeInfo, QueueInfo


def registry(addresses: dict[str, str]) -> dict[str, NodeInfo]:
    return {name: NodeInfo(name, f"{host}:80", f"{host}:7000") for name, host in addresses.items()}


TWO_PER_HOST = registry(
    {
        "a1": "10.0.0.1",
        "a2": "10.0.0.1",
        "b1": "10.0.0.2",
        "b2": "10.0.0.2",
        "c1": "10.0.0.3",
        "c2": "10.0.0.3",
    }
)


def test_host_of_is_the_raft_address_host_and_an_unregistered_node_is_a_host_of_its_own() -> None:
    nodes = {
        **TWO_PER_HOST,
        "v6": NodeInfo("v6", "[::1]:80", "[::1]:7001"),
        "bad": NodeInfo("bad", "", "nonsense"),
    }
    assert host_of("a1", nodes) == host_of("a2", nodes) == "10.0.0.1"
    assert host_of("v6", nodes) == "::1"
    assert host_of("new", nodes) != host_of("other", nodes)
    assert host_of("bad", nodes) == "node:bad"


def test_replicas_of_a_new_queue_go_to_distinct_hosts_before_a_shared_one() -> None:
    queues = [QueueInfo("q0", "g0", {}, ["b1", "b2", "c1"], 0)]  # b1, b2 and c1 already hold replicas
    members = place_replicas(
        TWO_PER_HOST,
        queues,
        size=3,
        locator=None,
        client_node="a1",
        host_of=lambda n: host_of(n, TWO_PER_HOST),
        registered=TWO_PER_HOST,
    )
    assert members[0] == "a1"
    assert sorted(host_of(m, TWO_PER_HOST) for m in members) == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert members[1:] == ["c2", "b1"]  # the fewest replicas among the unused hosts' nodes, then by name


def test_a_group_larger_than_the_hosts_shares_hosts_only_once_every_host_is_used() -> None:
    members = place_replicas(
        TWO_PER_HOST,
        [],
        size=5,
        locator="balanced",
        client_node=None,
        host_of=lambda n: host_of(n, TWO_PER_HOST),
        registered=TWO_PER_HOST,
    )
    assert len(set(members)) == 5
    assert len({host_of(m, TWO_PER_HOST) for m in members[:3]}) == 3


def test_one_host_per_node_places_as_before() -> None:
    nodes = ["n1", "n2", "n3", "n4"]
    queues = [QueueInfo("q0", "g0", {}, ["n1", "n2", "n3"], 0)]
    members = place_replicas(
        nodes, queues, size=3, locator=None, client_node="n2", host_of=lambda n: n, registered=nodes
    )
    assert members == ["n2", "n4", "n1"]


def test_rule_a_queue_is_placed_on_registered_nodes_while_there_are_enough_seed_1524() -> None:
    """Whole-node seed 1524: queue "stream" was placed on n5 before n5, which had joined, registered, so
    the declaration recorded no database for it and n5 waited to be added; n2 was wiped before the group
    elected anyone, and n3 alone could never elect a leader."""
    nodes = ["n1", "n2", "n3", "n4", "n5"]
    place = functools.partial(place_replicas, nodes, [], size=3, locator=None, host_of=lambda n: n)
    assert "n5" not in place(client_node="n5", registered={"n1", "n2", "n3", "n4"})
    assert place(client_node="n5", registered=nodes)[0] == "n5"
    too_few = place(client_node=None, registered={"n4", "n5"})
    assert sorted(too_few) == ["n1", "n2", "n3"]  # placed as before, the registered ones not preferred


def test_a_growing_group_adds_a_node_on_a_host_it_does_not_use() -> None:
    replicas = Counter({"a2": 0, "b2": 5, "c1": 9})
    chosen = next_replica(["a2", "b2", "c1"], ["a1", "b1"], replicas, lambda n: host_of(n, TWO_PER_HOST))
    assert chosen == "c1"  # the only node on a host the group lacks, though it holds the most replicas


@given(
    nodes=st.lists(st.sampled_from([f"n{i}" for i in range(7)]), min_size=1, max_size=7, unique=True),
    registered=st.sets(st.sampled_from([f"n{i}" for i in range(9)])),
    size=st.integers(min_value=1, max_value=5),
    client=st.sampled_from(["n0", "n3", None]),
)
def test_a_queue_goes_to_registered_nodes_whenever_enough_are_members(
    nodes: list[str], registered: set[str], size: int, client: str | None
) -> None:
    members = place_replicas(
        nodes, [], size=size, locator=None, client_node=client, host_of=str, registered=registered
    )
    assert len(members) == len(set(members)) == min(size, len(nodes))
    if len(registered & set(nodes)) >= len(members):
        assert set(members) <= registered


@given(
    hosts=st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=9),
    size=st.integers(min_value=1, max_value=7),
    existing=st.lists(st.lists(st.integers(min_value=0, max_value=8), min_size=1, max_size=3), max_size=5),
)
def test_placement_uses_as_many_hosts_as_it_can(
    hosts: list[int], size: int, existing: list[list[int]]
) -> None:
    nodes = {f"n{i}": f"10.0.0.{h}" for i, h in enumerate(hosts)}
    reg = registry(nodes)
    queues = [
        QueueInfo(f"q{i}", f"g{i}", {}, sorted({f"n{m}" for m in ms if f"n{m}" in nodes}), 0)
        for i, ms in enumerate(existing)
    ]
    members = place_replicas(
        reg,
        queues,
        size=size,
        locator="balanced",
        client_node=None,
        host_of=lambda n: host_of(n, reg),
        registered=reg,
    )
    assert len(members) == len(set(members)) == min(size, len(nodes))
    assert len({nodes[m] for m in members}) == min(len(members), len(set(nodes.values())))
