"""The rolling-upgrade rule on real nodes: once every node of the cluster has said it reads the newest
version of the queue operation envelope (control frames, each second), each says so in its health report
and queue leaders write it, and every replica holds the same messages whatever version carried them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgpack
from node_helpers import every_node_writes_the_newest_queue_ops

from cli.node_processes import ProcessCluster
from cluster.replication.entry_codec import QUEUE_OP_VERSION, op_bodies
from cluster.store.store_damage import DATABASE_DIR
from quorumq import Client
from raft_log.storage.node_store import NodeStore


def published_versions(data_dir: Path) -> list[int]:
    """The envelope version of every publish in the queue groups of a stopped node's log, oldest first."""
    store = NodeStore.open(data_dir / DATABASE_DIR)
    try:
        versions = []
        for gid in store.group_ids():
            group_log = store.group(gid)
            for entry in group_log.entries(group_log.first_index(), group_log.last_index() + 1):
                ops = msgpack.unpackb(entry.data, raw=False) if entry.data else []
                if not isinstance(ops, list):  # the metadata group's entries are not queue operations
                    continue
                versions += [op[0] if len(op) == 4 else 0 for op in ops if op_bodies(op) is not None]
        return versions
    finally:
        store.close()


def test_a_cluster_whose_nodes_all_read_version_1_writes_its_publishes_in_it(tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path)

    async def publish() -> list[bytes]:
        async with Client(cluster.urls) as client:
            await client.declare("versions")
            for n in range(3):
                await client.publish("versions", [f"m{n}".encode()])
            return [m.body for m in await client.browse("versions", limit=10)]

    try:
        every_node_writes_the_newest_queue_ops(cluster)
        bodies = asyncio.run(publish())
    finally:
        cluster.stop()
    assert bodies == [b"m0", b"m1", b"m2"]
    for node in cluster.nodes:
        assert published_versions(node.data_dir) == [QUEUE_OP_VERSION] * 3, node.name
