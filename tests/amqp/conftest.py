"""One real node serving AMQP for the single-node AMQP tests of this directory (each uses queues of its
own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cli.node_processes import NodeProcess, ProcessCluster


@pytest.fixture(scope="package")
def amqp_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    """One node started for the tests that use it, with its AMQP listener."""
    cluster = ProcessCluster.start(tmp_path_factory.mktemp("amqp"), count=1, amqp=True)
    try:
        yield cluster.nodes[0]
    finally:
        cluster.stop()


@pytest.fixture
def amqp_port(amqp_node: NodeProcess) -> int:
    """The shared node's AMQP port."""
    assert amqp_node.amqp_port is not None
    return amqp_node.amqp_port
