"""The power nemesis really loses what its victims had not fsynced, on a real cluster on lazy filesystems.

Before each fault the test writes two markers into every node's data directory: one without any fsync,
one with the file and the directory fsynced. After the fault the victims' unsynced markers are gone and
their synced ones intact, the other nodes keep both, the nodes come back healthy, and a publish
confirmed before the fault is still there.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from netns_cluster import QUEUE, running_cluster

from cluster.store.durable_files import sync_directory
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.lazy_mount import is_mounted, unavailable_reason
from jepsen_tests.power_nemesis import PowerNemesis
from quorumq import SyncClient

pytestmark = pytest.mark.faults

UNSYNCED = "marker-unsynced"
SYNCED = "marker-synced"
MARKER = b"m" * 5000
SEEDS = {"all": 0, "leader": 1, "rolling": 5}  # Random(seed) draws this variant first


@pytest.fixture(scope="module")
def lazy_cluster(netns_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JepsenCluster]:
    """Three nodes in namespaces, each data directory on its own lazy filesystem, queue `proof`."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with running_cluster(tmp_path_factory.mktemp("power-cluster"), lazy_fs=True) as cluster:
        with SyncClient(cluster.urls, timeout=30.0) as client:
            client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        yield cluster
    assert not any(is_mounted(node.data_dir) for node in cluster.nodes)


def write_markers(data_dir: Path) -> None:
    """A marker synced with its directory, then one written after it with no fsync at all."""
    (data_dir / UNSYNCED).unlink(missing_ok=True)  # left by an earlier test where this node survived
    descriptor = os.open(data_dir / SYNCED, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(descriptor, MARKER)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    sync_directory(data_dir)
    (data_dir / UNSYNCED).write_bytes(MARKER)


def markers(data_dir: Path) -> dict[str, bytes]:
    return {name: (data_dir / name).read_bytes() for name in (UNSYNCED, SYNCED) if (data_dir / name).exists()}


@pytest.mark.parametrize("variant", list(SEEDS))
def test_power_loses_what_the_victims_had_not_synced_and_they_come_back(
    lazy_cluster: JepsenCluster, variant: str
) -> None:
    cluster = lazy_cluster
    body = f"confirmed before power {variant}"
    with SyncClient(cluster.urls, timeout=30.0) as client:
        client.publish(QUEUE, [body])
    for node in cluster.nodes:
        write_markers(node.data_dir)
    leader = cluster.queue_leader(QUEUE)
    fault = PowerNemesis().inject(cluster, [QUEUE], random.Random(SEEDS[variant]))
    assert fault.kind == variant
    expected_victims = {"all": cluster.names, "leader": [leader], "rolling": cluster.names}[variant]
    assert sorted(fault.nodes) == sorted(expected_victims)
    for name in cluster.names:
        data_dir = cluster.node(name).data_dir
        if name in fault.nodes:
            assert markers(data_dir) == {SYNCED: MARKER}, name  # the unsynced one has no name left
            assert f"{name} lost " in fault.description
        else:
            assert markers(data_dir) == {UNSYNCED: MARKER, SYNCED: MARKER}, name
    if variant == "rolling":
        assert all(cluster.node(n).running for n in cluster.names)  # restarted within the fault
    else:
        assert not any(cluster.node(n).running for n in fault.nodes)
    fault.heal()
    cluster.wait_for_quorum([QUEUE])
    with SyncClient(cluster.urls, timeout=30.0) as client:
        client.publish(QUEUE, ["after"])
        bodies = [d.body for d in client.get(QUEUE, count=10, ack="auto")]
    assert bodies == [body.encode(), b"after"]
