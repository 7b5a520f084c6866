"""/api/health must say no_quorum when a node cannot reach a majority (what a container health check,
a load balancer or an operator relies on), and ok again once it can."""

from __future__ import annotations

import signal

import pytest

from cli.node_processes import ProcessCluster, wait_healthy, wait_until
from quorumq import SyncClient


def _health(url: str) -> dict:
    with SyncClient([url], timeout=2.0) as client:
        return client.health()


@pytest.mark.faults
def test_follower_cut_off_from_every_peer_reports_no_quorum(cluster: ProcessCluster) -> None:
    meta_leader = _health(cluster.urls[0])["metadata_leader"]
    follower = next(n for n in cluster.nodes if n.name != meta_leader)
    others = [n for n in cluster.nodes if n is not follower]
    for node in others:  # frozen peers: their connections stay open but nothing arrives
        node.signal(signal.SIGSTOP)
    try:
        wait_until(
            lambda: _health(follower.url)["status"] == "no_quorum", 15, f"{follower.name} to report no_quorum"
        )
    finally:
        for node in others:
            node.signal(signal.SIGCONT)
    wait_healthy(cluster.nodes)
