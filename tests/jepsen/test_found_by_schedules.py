"""Regression tests for what the fault schedules found, each named after the schedule that found it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from netns_cluster import QUEUE

from cli.node_processes import ProcessCluster, plan_cluster, wait_healthy
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.lazy_mount import LazyMount, unavailable_reason
from jepsen_tests.network_faults import apply_grudge, heal_partitions
from jepsen_tests.partitions import grudge_from_components
from quorumq import SyncClient

pytestmark = pytest.mark.faults

BRIDGE_HELD_S = 16.0
NEW_LEADER_S = 6.0  # two election timeouts and a reconnect take about 3 s; a stalled connection ~12 s


def test_seed1000_n3_consumer_timeout_survives_a_leader_change(tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path)
    try:
        with SyncClient(cluster.urls, timeout=30.0) as client:
            client.declare("held")
            client.publish("held", ["1"])
            silent = client.consume("held", prefetch=1, timeout_ms=3000)
            assert len(client.deliveries("held", silent, max=1, wait=5)) == 1
            cluster.node(client.queue("held")["leader"]).kill()
            killed_at = time.monotonic()
            again = client.consume("held", prefetch=1)
            returned: list = []
            while not returned and time.monotonic() - killed_at < 15:
                returned = client.deliveries("held", again, max=1, wait=1)
        assert returned, "the silent consumer's message did not return within 15 s (its timeout is 3 s)"
    finally:
        cluster.stop()


def test_seed1_n3_power_all_a_node_keeps_its_data_directory_through_a_power_failure(tmp_path: Path) -> None:
    """Every node came back empty after `power all` (the cluster bootstrapped anew, every queue was
    gone): nothing fsynced the data directory, so neither node.json nor the rocksdb directory had a
    durable name in it."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    (node,) = plan_cluster(1, tmp_path)
    mount = LazyMount(node.data_dir, tmp_path / "lazyfs-store", tmp_path / "lazyfs.log")
    mount.start()
    try:
        node.start()
        wait_healthy([node])
        with SyncClient([node.url], timeout=30.0) as client:
            client.declare("kept")
            client.publish("kept", ["confirmed"])
        node.kill()
        mount.discard()
        node.start()
        wait_healthy([node])
        with SyncClient([node.url], timeout=30.0) as client:
            assert [d.body for d in client.get("kept", count=1, ack="auto")] == [b"confirmed"]
    finally:
        node.stop()
        mount.stop()


def test_seed106_n3_a_leader_cut_off_just_after_a_bridge_heals_is_replaced_within_seconds(
    healed: JepsenCluster,
) -> None:
    """`bridge` then `random-halves` (partition seed 106, 3 nodes): while the bridge cut the two followers
    apart, their connection kept retransmitting with a doubling timeout, so after the heal it stayed silent
    for seconds and they could not elect a leader when the next partition cut theirs off."""
    cluster = healed
    leader = cluster.queue_leader(QUEUE)
    assert leader is not None
    first, second = (n for n in cluster.names if n != leader)
    apply_grudge(cluster.hosts, grudge_from_components(cluster.names, [[leader, first], [leader, second]]))
    time.sleep(BRIDGE_HELD_S)  # the fault's duration, long enough for retransmissions to back off
    heal_partitions(cluster.hosts)
    apply_grudge(cluster.hosts, grudge_from_components(cluster.names, [[leader], [first, second]]))
    try:
        with SyncClient([cluster.node(first).url, cluster.node(second).url], timeout=NEW_LEADER_S) as client:
            client.publish(QUEUE, ["after the bridge"])
    finally:
        heal_partitions(cluster.hosts)
