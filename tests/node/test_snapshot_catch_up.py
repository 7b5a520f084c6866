"""A follower too far behind for the log catches up from a snapshot that carries the bodies."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest
from node_helpers import local_queues

from api.client import QuorumqClient
from cli.node_processes import ProcessCluster, wait_healthy, wait_until
from raft_log.storage import NodeStore

SNAPSHOT_EVERY = 20


@pytest.mark.faults
async def test_follower_far_behind_installs_snapshot_with_exactly_the_live_bodies(tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path, env={"QUORUMQ_SNAPSHOT_EVERY_ENTRIES": str(SNAPSHOT_EVERY)})
    try:
        async with QuorumqClient(cluster.urls) as client:
            await client.declare("far")
            stats = await client.queue("far")
            follower = cluster.node(next(m for m in stats["members"] if m != stats["leader"]))
            follower.kill()
            ids = [(await client.publish("far", [f"m{i}"]))[0] for i in range(10 * SNAPSHOT_EVERY)]
            got = await client.get("far", count=50, ack="auto")
            live = set(ids) - {d.id for d in got}
            follower.start()
            await asyncio.to_thread(wait_healthy, [follower])

            def caught_up() -> bool:
                return local_queues(follower.url).get("far", {}).get("messages") == len(live)

            await asyncio.to_thread(wait_until, caught_up, 30, "the follower to catch up", [follower])
        follower.stop()
        store = NodeStore.open(follower.data_dir / "rocksdb")
        try:
            (group,) = [g for g in store.group_ids() if g.endswith(".far")]
            stored = {struct.unpack(">Q", key[1:])[0] for key, _ in store.group(group).app_items(b"b")}
            assert store.group(group).snapshot().meta.index > 0
        finally:
            store.close()
        assert stored == live
    finally:
        cluster.stop()
