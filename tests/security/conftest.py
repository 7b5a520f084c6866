"""A 3-node cluster without the loopback guest, shared by the security tests of one module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from security_helpers import NO_GUEST

from cli.node_processes import ProcessCluster


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """Nodes that accept only real credentials (the harness administrator is bootstrapped)."""
    cluster = ProcessCluster.start(tmp_path_factory.mktemp("secured"), 3, env=NO_GUEST)
    yield cluster
    cluster.stop()
