"""One real node serving AMQP for the single-node AMQP tests of this directory (each uses queues of its
own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cli.node_processes import ProcessCluster, free_ports


@pytest.fixture(scope="package")
def amqp_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The AMQP port of one node started for the tests that use it."""
    port = free_ports(1)[0]
    cluster = ProcessCluster.start(
        tmp_path_factory.mktemp("amqp"), count=1, extra_args=[f"--amqp=127.0.0.1:{port}"]
    )
    try:
        yield port
    finally:
        cluster.stop()
