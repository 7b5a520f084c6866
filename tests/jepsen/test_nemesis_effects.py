"""Each nemesis really does what it claims on a real cluster in network namespaces.

A nemesis that cuts nothing would make every run pass, so each test shows the fault's effect while it is
in force (an isolated node confirms nothing, a paused node does not answer, ...) and its absence after.
"""

from __future__ import annotations

import random
import sys
import time

import pytest
from netns_cluster import QUEUE

from cli.node_processes import wait_healthy, wait_until
from jepsen_tests.cluster import RAFT_PORT, JepsenCluster
from jepsen_tests.nemesis import KillNemesis, MembershipNemesis, PauseNemesis
from jepsen_tests.network_faults import (
    apply_grudge,
    degrade_link,
    dropped_peers,
    heal_partitions,
    restore_link,
)
from jepsen_tests.partitions import SHAPES, grudge_from_components
from quorumq import QuorumqError, SyncClient

pytestmark = pytest.mark.faults

CONNECT_PROBE = (
    "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1).close()"
)


def publish_confirmed(urls: list[str], timeout: float) -> bool:
    """True when one publish through `urls` is confirmed within `timeout` seconds."""
    try:
        with SyncClient(urls, timeout=timeout, connect_timeout=1.0) as client:
            client.publish(QUEUE, ["probe"])
        return True
    except QuorumqError:
        return False


def can_connect(cluster: JepsenCluster, source: str, target: str) -> bool:
    """Whether a TCP connection from `source`'s namespace reaches `target`'s Raft port."""
    probe = cluster.host(source).run(
        sys.executable, "-c", CONNECT_PROBE, cluster.host(target).address, str(RAFT_PORT), check=False
    )
    return probe.returncode == 0


def test_isolated_leader_confirms_nothing_while_the_majority_goes_on(healed: JepsenCluster) -> None:
    cluster = healed
    lonely = cluster.queue_leader(QUEUE)
    assert lonely is not None
    others = [n for n in cluster.names if n != lonely]
    apply_grudge(cluster.hosts, grudge_from_components(cluster.names, [[lonely], others]))
    try:
        assert not publish_confirmed([cluster.node(lonely).url], timeout=3.0)
        assert publish_confirmed([cluster.node(n).url for n in others], timeout=30.0)
        assert not publish_confirmed([cluster.node(lonely).url], timeout=3.0)
    finally:
        heal_partitions(cluster.hosts)
    wait_until(
        lambda: publish_confirmed([cluster.node(lonely).url], timeout=3.0), 30, "the healed node to confirm"
    )


def test_drop_rules_cut_exactly_the_connections_the_grudge_names(healed: JepsenCluster) -> None:
    cluster = healed
    partition = SHAPES["one-way"](cluster.names, random.Random(2))
    apply_grudge(cluster.hosts, partition.grudge)
    try:
        for name in cluster.names:
            assert dropped_peers(cluster.hosts, cluster.host(name)) == partition.grudge[name]
        for a in cluster.names:
            for b in cluster.names:
                if a != b:
                    cut = b in partition.grudge[a] or a in partition.grudge[b]
                    assert can_connect(cluster, a, b) is not cut, (a, b, partition.description)
    finally:
        heal_partitions(cluster.hosts)
    assert all(can_connect(cluster, a, b) for a in cluster.names for b in cluster.names if a != b)


def test_killed_nodes_stop_answering_and_come_back_when_healed(healed: JepsenCluster) -> None:
    cluster = healed
    fault = KillNemesis().inject(cluster, [QUEUE], random.Random(1))
    assert fault.nodes
    for name in fault.nodes:
        assert not cluster.node(name).running
        assert not cluster.node(name).healthy()
    fault.heal()
    wait_healthy([cluster.node(n) for n in fault.nodes], 60)


def test_membership_nemesis_changes_the_replica_set_and_heals_it_back(healed: JepsenCluster) -> None:
    cluster = healed
    before = sorted(cluster.queue_members(QUEUE))
    assert len(before) == 3
    # a node restarted by the previous test may be healthy before the leader's link to it is back,
    # and a removal then (rightly) refuses with no_quorum
    wait_until(lambda: cluster.members_all_up(QUEUE), 30, "the leader to reach every member")
    fault = MembershipNemesis().inject(cluster, [QUEUE], random.Random(1))
    assert fault.description.endswith(": ok"), fault.description
    (node,) = fault.nodes
    during = sorted(cluster.queue_members(QUEUE))
    assert (node in during) == (fault.kind == "add") and during != before
    assert publish_confirmed(cluster.urls, 15)
    fault.heal()
    wait_until(lambda: sorted(cluster.queue_members(QUEUE)) == before, 30, "the replica set to heal")


def test_paused_nodes_keep_running_but_do_not_answer_until_resumed(healed: JepsenCluster) -> None:
    cluster = healed
    fault = PauseNemesis().inject(cluster, [QUEUE], random.Random(3))
    for name in fault.nodes:
        assert cluster.node(name).running
        assert not cluster.node(name).healthy()
    fault.heal()
    wait_healthy([cluster.node(n) for n in fault.nodes], 30)


def fetch_seconds(url: str, queue: str) -> float:
    """Seconds to take one (large) message from `queue` through the node at `url`."""
    with SyncClient([url], timeout=60.0) as client:
        started = time.monotonic()
        assert len(client.get(queue, count=1, ack="auto")) == 1
        return time.monotonic() - started


def test_degraded_link_slows_the_node_down_until_restored(healed: JepsenCluster) -> None:
    cluster = healed
    node = cluster.nodes[0]
    with SyncClient(cluster.urls, timeout=30.0) as client:
        client.declare("proof-large")
        client.publish("proof-large", [b"x" * 40_000 for _ in range(5)])
    before = min(fetch_seconds(node.url, "proof-large") for _ in range(2))
    degrade_link(cluster.host(node.name), delay_ms=500, jitter_ms=0, loss_percent=0)
    try:
        slowed = fetch_seconds(node.url, "proof-large")
    finally:
        restore_link(cluster.host(node.name))
    after = min(fetch_seconds(node.url, "proof-large") for _ in range(2))
    assert slowed > max(0.4, 5 * before), (before, slowed)
    assert after < slowed / 3, (after, slowed)
