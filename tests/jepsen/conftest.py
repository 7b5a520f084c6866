"""Fault-suite fixtures: skipped, with the reason printed, where network namespaces are unavailable."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from netns_cluster import QUEUE, running_cluster

from cluster.config import NodeConfig
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.hosts import unavailable_reason
from quorumq import SyncClient


@pytest.fixture(scope="module", autouse=True)
def production_ballast() -> Iterator[None]:
    """The node's own disk ballast for the fault suite, whose full disks give it back (tests/conftest.py
    sets a smaller one for every other test)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QUORUMQ_DISK_BALLAST_BYTES", str(NodeConfig.disk_ballast_bytes))
        yield


@pytest.fixture(scope="session")
def netns_ready() -> None:
    """Skip (printing why) unless this process may create network namespaces."""
    reason = unavailable_reason()
    if reason:
        print(f"fault suite skipped: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def netns_cluster(netns_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JepsenCluster]:
    """Three nodes in their own namespaces with queue `proof` replicated on all; removed afterwards."""
    with running_cluster(tmp_path_factory.mktemp("netns-cluster")) as cluster:
        with SyncClient(cluster.urls, timeout=30.0) as client:
            client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        yield cluster


@pytest.fixture
def healed(netns_cluster: JepsenCluster) -> Iterator[JepsenCluster]:
    """The shared cluster, healed of every fault and back to quorum after the test."""
    yield netns_cluster
    netns_cluster.heal_everything()
    netns_cluster.wait_for_quorum([QUEUE])
