"""Fixtures of the cluster unit tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from gated_cluster import Node, gated_cluster
from stepped_cluster import SteppedCluster

from raft_log.storage.node_store import NodeStore


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[dict[str, Node]]:
    """Three gated RaftHosts sharing one group (`gated_cluster`)."""
    async with gated_cluster(tmp_path) as result:
        yield result


@pytest.fixture
def store(tmp_path: Path) -> Iterator[NodeStore]:
    """A node database, open, in the test's directory."""
    opened = NodeStore.open(tmp_path / "db")
    yield opened
    opened.close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SteppedCluster]:
    """A stepped cluster whose group `a` leads, quiet on every member (`SteppedCluster.quiet`)."""
    cluster = SteppedCluster.quiet(tmp_path)
    yield cluster
    cluster.close()
