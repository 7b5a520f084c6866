"""Resource alarms on real nodes (docs/operate/operations.md, "Resource alarms"): a node whose data
directory's filesystem fills below its `disk_free_limit` holds back publishes to the queues with a replica
on it, and only those, while consumers drain; a publishing stream is told `blocked`, then `unblocked`
once space is freed, and publishing resumes by itself; a refused publish says when to retry on every
node, the leader's answer passed on by the others too. A node above its memory watermark does the same.
The full disk is a real 64 MiB tmpfs filled by a real file (root mounts it, as CI runs)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from raw_stream import publish, raw_stream
from support.eventually import eventually
from support.small_disk import small_disk

from cli.node_processes import HARNESS_HEADERS, ProcessCluster, plan_cluster, wait_healthy
from quorumq import Client, ResourceAlarmError

MIB = 1024 * 1024
DISK_SIZE = 64 * MIB
DISK_FREE_LIMIT = 24 * MIB


@pytest.fixture
def cluster_with_a_small_disk(tmp_path: Path) -> Iterator[ProcessCluster]:
    """Three nodes; node3's data directory is on its own small disk."""
    nodes = plan_cluster(3, tmp_path)
    with small_disk(nodes[2].data_dir, DISK_SIZE):
        env = {**os.environ, "QUORUMQ_DISK_FREE_LIMIT": str(DISK_FREE_LIMIT)}
        for node in nodes:
            node.env = env
            node.start()
        cluster = ProcessCluster(nodes)
        try:
            wait_healthy(nodes)
            yield cluster
        finally:
            cluster.stop()
            print(cluster.log_tails())


async def _alarms(url: str) -> tuple[int, dict]:
    async with (
        aiohttp.ClientSession(headers=HARNESS_HEADERS) as http,
        http.get(url + "/api/health/checks/alarms") as answer,
    ):
        return answer.status, await answer.json()


def _fill(disk: Path) -> Path:
    """Leave 8 MiB free on `disk`: below the limit."""
    filler = disk / "filler"
    size = shutil.disk_usage(disk).free - 8 * MIB
    with filler.open("wb") as out:
        for _ in range(size // MIB):
            out.write(b"\0" * MIB)
        out.flush()
        os.fsync(out.fileno())
    return filler


async def test_a_full_disk_holds_back_the_queues_on_its_node_while_consumers_drain(
    cluster_with_a_small_disk: ProcessCluster,
) -> None:
    cluster = cluster_with_a_small_disk
    node1, _, node3 = cluster.nodes
    async with Client([node1.url], timeout=30.0) as client:
        await client.declare("spread", {"x-quorum-initial-group-size": 3})  # a replica on node3
        await client.declare("away", {"x-quorum-initial-group-size": 1})  # on node1 alone
        await client.publish("spread", [b"before-1", b"before-2"])
    async with raw_stream(node1.url) as stream:  # a publish whose answer its client will not have seen
        first = await stream.call(**publish(0, "spread", b"answer lost", publisher="retrier", seq=7))
        assert first["op"] == "confirm"
    assert await _alarms(node1.url) == (200, {"status": "ok"})

    filler = _fill(node3.data_dir)
    await eventually(lambda: _alarms_named(node1.url, "node3"), "node3 in alarm", interval=0.1)
    async with Client([node1.url], timeout=3.0) as client:
        with pytest.raises(ResourceAlarmError, match="node3 is in a disk alarm"):
            await client.publish("spread", [b"held back"])
        assert len(await client.publish("away", [b"elsewhere"])) == 1  # its replicas are not on node3
        got = await client.get("spread", count=3)  # consumers drain
        assert [m.body for m in got] == [b"before-1", b"before-2", b"answer lost"]
        await client.ack_got("spread", [m.id for m in got])
        nodes = {n["name"]: n for n in await client.nodes()}
        assert nodes["node3"]["disk_free_alarm"] is True and nodes["node1"]["disk_free_alarm"] is False
    for node in cluster.nodes:  # the leader's answer, and the same answer passed on by the others
        for size in (1, 2 * MIB):  # passed on over the peer transport, and (a large body) over HTTP
            assert await _raw_publish(node.url, "spread", size) == (503, "resource_alarm", "5"), node.name
        assert nodes["node3"]["disk_free_limit"] == DISK_FREE_LIMIT

    async with raw_stream(node1.url) as stream:
        await stream.send(**publish(1, "spread", b"on the stream"))
        frames = await stream.collect(lambda f: any(x.get("id") == 1 for x in f))
        blocked = next(f for f in frames if f["op"] == "blocked")
        assert {"node": "node3", "resource": "disk"} in blocked["alarms"]
        refused = next(f for f in frames if f.get("id") == 1)
        assert (refused["op"], refused["status"], refused["error"]) == ("error", 503, "resource_alarm")
        again = await stream.call(**publish(3, "spread", b"answer lost", publisher="retrier", seq=7))
        assert (again["op"], again["ids"], again["duplicate"]) == ("confirm", first["ids"], True)
        filler.unlink()
        await stream.collect(lambda f: any(x["op"] == "unblocked" for x in f), timeout=30.0)
        answer = await stream.call(**publish(2, "spread", b"after"))
        assert answer["op"] == "confirm" and len(answer["ids"]) == 1
    assert await _alarms(node1.url) == (200, {"status": "ok"})
    async with Client([node1.url], timeout=30.0) as client:
        assert [m.body for m in await client.browse("spread")] == [b"after"]  # nothing held back got in


async def _raw_publish(url: str, queue: str, size: int) -> tuple[int, str, str | None]:
    """The status, error code and Retry-After of a publish of a `size`-byte body to the node at `url`."""
    message = {"messages": [{"body": "x" * size}]}
    async with (
        aiohttp.ClientSession(headers=HARNESS_HEADERS) as http,
        http.post(f"{url}/api/queues/{queue}/messages", json=message) as answer,
    ):
        body = await answer.json()
        return answer.status, body.get("error"), answer.headers.get("Retry-After")


async def _alarms_named(url: str, node: str) -> bool:
    status, body = await _alarms(url)
    return status == 503 and {"node": node, "resource": "disk"} in body["alarms"]


async def test_a_node_above_its_memory_watermark_holds_back_publishes_and_says_so(tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path, count=1, env={"QUORUMQ_VM_MEMORY_HIGH_WATERMARK": "1MB"})
    try:
        (node,) = cluster.nodes
        async with Client([node.url], timeout=2.0) as client:
            await client.declare("q")
            with pytest.raises(ResourceAlarmError, match="node1 is in a memory alarm"):
                await client.publish("q", [b"x"])
            (report,) = await client.nodes()
            assert report["mem_alarm"] is True and report["mem_limit"] == 1_000_000
        status, body = await _alarms(node.url)
        assert status == 503 and body["alarms"] == [{"node": "node1", "resource": "memory"}]
        async with (
            aiohttp.ClientSession(headers=HARNESS_HEADERS) as http,
            http.get(node.url + "/metrics") as answer,
        ):
            text = await answer.text()
        assert "quorumq_alarms_memory_used_watermark 1.0" in text
        assert "quorumq_alarms_free_disk_space_watermark 0.0" in text
    finally:
        cluster.stop()
