"""A write the disk refuses stops the node, not its process (issue 40), on a real cluster on lazy
filesystems: every node's disk is filled to the last byte, and a consumer's get, whose checkout is a log
entry, makes each node write; each one's write fails. The processes keep running. Without a ballast to
give back, each node's HTTP port answers 503 `resource_alarm` until its disk has room again, and then
it starts again by itself; with one, it gives the ballast back and serves on at once. Either way every
confirmed message is still there."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from netns_cluster import QUEUE, running_cluster
from support.eventually import eventually_sync

from cluster.store.disk_ballast import BALLAST
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.lazy_mount import unavailable_reason
from quorumq import QuorumqError, SyncClient

pytestmark = pytest.mark.faults

BODIES = [f"confirmed before the disk filled {i}" for i in range(20)]


@pytest.fixture(autouse=True)
def lazy_fs_available(netns_ready: None) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)


def health(url: str) -> tuple[int, dict[str, Any]]:
    """The status and JSON body a node's `GET /api/health` answers."""
    try:
        with urllib.request.urlopen(f"{url}/api/health", timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def paused(url: str) -> bool:
    status, body = health(url)
    return status == 503 and body.get("error") == "resource_alarm" and body.get("paused") is True


def publish_and_fill(cluster: JepsenCluster) -> None:
    """Publish BODIES, confirmed by all three replicas' disks, then leave every disk no byte free."""
    with SyncClient(cluster.urls, timeout=30.0) as client:
        client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        client.publish(QUEUE, BODIES)
    for name in cluster.names:
        cluster.fill_disk(name, 0)


def drained(cluster: JepsenCluster, got: list[str]) -> bool:
    """Take and acknowledge what the queue holds into `got`; whether `got` then holds every one of BODIES
    (a get whose outcome is unknown may have checked messages out: they come back when its hold ends)."""
    with SyncClient(cluster.urls, timeout=10.0, connect_timeout=1.0) as client:
        while batch := client.get(QUEUE, count=100):
            client.ack_got(QUEUE, [delivery.id for delivery in batch])
            got += [bytes(delivery.body).decode() for delivery in batch]
    return set(got) == set(BODIES)


def drain(cluster: JepsenCluster) -> list[str]:
    """Every message of BODIES, taken from the queue and acknowledged, as often as each was taken."""
    got: list[str] = []
    eventually_sync(lambda: drained(cluster, got), "every confirmed message taken", timeout=120, interval=1.0)
    return got


def assert_never_exited(cluster: JepsenCluster, processes: dict[str, Any]) -> None:
    for node in cluster.nodes:
        assert node.process is processes[node.name] and node.process.poll() is None, node.name
        assert node.restarts == 0, node.name


@pytest.mark.timeout(300)
def test_rule_a_write_the_disk_refuses_pauses_the_node_until_it_has_room_losing_nothing(
    tmp_path: Path,
) -> None:
    with running_cluster(tmp_path, lazy_fs=True, settings={"QUORUMQ_DISK_BALLAST_BYTES": "0"}) as cluster:
        publish_and_fill(cluster)
        processes = {node.name: node.process for node in cluster.nodes}
        refused = pytest.raises(QuorumqError)
        with SyncClient(cluster.urls, timeout=5.0, connect_timeout=1.0) as client, refused:
            client.get(QUEUE, count=5)
        eventually_sync(lambda: all(paused(url) for url in cluster.urls), "every node paused", timeout=60)
        assert_never_exited(cluster, processes)

        for name in cluster.names:
            cluster.unfill_disk(name)
        eventually_sync(
            lambda: all(health(url)[0] == 200 for url in cluster.urls), "every node serving again", timeout=90
        )
        assert sorted(set(drain(cluster))) == sorted(BODIES)
        assert_never_exited(cluster, processes)


@pytest.mark.timeout(300)
def test_rule_a_node_gives_back_its_ballast_after_a_failed_write_and_serves_on(tmp_path: Path) -> None:
    with running_cluster(tmp_path, lazy_fs=True) as cluster:  # the node's own ballast (conftest.py)
        ballasts = {node.name: (node.data_dir / BALLAST).stat().st_size for node in cluster.nodes}
        assert all(ballasts.values()), ballasts
        publish_and_fill(cluster)
        processes = {node.name: node.process for node in cluster.nodes}
        assert sorted(set(drain(cluster))) == sorted(BODIES)  # the first gets fail, and are tried again
        for node in cluster.nodes:  # given back (and a smaller one set aside from the room it made)
            assert (node.data_dir / BALLAST).stat().st_size < ballasts[node.name], node.name
        assert_never_exited(cluster, processes)
