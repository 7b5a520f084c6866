"""A 3-node cluster without the loopback guest, shared by the security tests of one module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.node_processes import ProcessCluster

NO_GUEST = {"QUORUMQ_LOOPBACK_GUEST": "false"}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """Nodes that accept only real credentials (the harness administrator is bootstrapped)."""
    cluster = ProcessCluster.start(tmp_path_factory.mktemp("secured"), 3, env=NO_GUEST)
    yield cluster
    cluster.stop()


def start_cluster(data_dir: Path, env: dict[str, str]) -> ProcessCluster:
    """A 3-node cluster with extra QUORUMQ_* settings."""
    return ProcessCluster.start(data_dir, 3, env=env)
