"""A three-node cluster in network namespaces for the fault-suite tests, and the queue they use."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.hosts import NetnsHosts

QUEUE = "proof"


@contextlib.contextmanager
def running_cluster(
    data_dir: Path,
    *,
    lazy_fs: bool = False,
    fake_clocks: bool = False,
    settings: dict[str, str] | None = None,
) -> Iterator[JepsenCluster]:
    """Three healthy nodes in their own namespaces, each given `settings` (`QUORUMQ_*` variables) too;
    stopped and removed afterwards."""
    with NetnsHosts(3) as hosts:
        cluster = JepsenCluster(hosts, data_dir, lazy_fs=lazy_fs, fake_clocks=fake_clocks)
        for node in cluster.nodes:
            if settings:
                node.env = {**(node.env or os.environ), **settings}
        try:
            cluster.start_all()
            yield cluster
        finally:
            cluster.stop_all()
