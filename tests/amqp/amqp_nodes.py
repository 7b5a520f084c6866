"""3-node clusters serving AMQP, for the tests of this directory that need more than one node."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from cli.node_processes import ProcessCluster, free_ports, loopback_hosts, plan_cluster, wait_healthy


@contextlib.contextmanager
def amqp_cluster(data_dir: Path) -> Iterator[ProcessCluster]:
    """Three nodes, each on its own loopback address with its AMQP listener on one port, while the block
    runs."""
    port = free_ports(1)[0]
    nodes = plan_cluster(3, data_dir, hosts=loopback_hosts(3, 3))
    cluster = ProcessCluster(nodes)
    try:
        for node in nodes:
            node.amqp_port = port
            node.start()
        wait_healthy(nodes)
        yield cluster
    finally:
        cluster.stop()
