"""A follower too far behind for the log catches up from a snapshot that carries the bodies, and then
serves exactly the queued ones as leader."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from node_helpers import local_queues

from cli.node_processes import ProcessCluster, wait_healthy, wait_until
from quorumq import Client
from raft_log.storage.node_store import CorruptionError, GroupLog, NodeStore

SNAPSHOT_EVERY = 20


@pytest.mark.faults
async def test_far_behind_follower_installs_a_snapshot_and_serves_exactly_the_live_bodies(
    tmp_path: Path,
) -> None:
    cluster = ProcessCluster.start(tmp_path, env={"QUORUMQ_SNAPSHOT_EVERY_ENTRIES": str(SNAPSHOT_EVERY)})
    try:
        async with Client(cluster.urls) as client:
            await client.declare("far")
            stats = await client.queue("far")
            follower = cluster.node(next(m for m in stats["members"] if m != stats["leader"]))
            follower.kill()
            ids = [(await client.publish("far", [f"m{i}"]))[0] for i in range(10 * SNAPSHOT_EVERY)]
            got = await client.get("far", count=50, ack="auto")
            live = {message_id: f"m{i}" for i, message_id in enumerate(ids)}
            for delivery in got:
                del live[delivery.id]
            follower.start()
            await asyncio.to_thread(wait_healthy, [follower])

            def caught_up() -> bool:
                return local_queues(follower.url).get("far", {}).get("messages") == len(live)

            await asyncio.to_thread(wait_until, caught_up, 30, "the follower to catch up", [follower])
            await client.transfer_leader("far", follower.name)
            served = {d.id: d.text for d in await client.get("far", count=len(live) + 10, ack="auto")}
            assert (await client.queue("far"))["leader"] == follower.name
        assert served == live
        follower.stop()
        store = NodeStore.open(follower.data_dir / "rocksdb")
        try:
            (group,) = [g for g in store.group_ids() if g.endswith(".far")]
            assert store.group(group).snapshot().meta.index > 0
        finally:
            store.close()
    finally:
        cluster.stop()


@pytest.mark.faults
async def test_bodies_kept_or_copied_out_at_compaction_survive_killing_every_node(tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path, env={"QUORUMQ_SNAPSHOT_EVERY_ENTRIES": str(SNAPSHOT_EVERY)})
    try:
        async with Client(cluster.urls) as client:
            await client.declare("kept")
            published: dict[int, str] = {}
            acked: list[int] = []
            for batch in range(2 * SNAPSHOT_EVERY):  # one entry each
                ids = await client.publish("kept", [f"b{batch}-{i}" for i in range(6)])
                published.update((message_id, f"b{batch}-{i}") for i, message_id in enumerate(ids))
                # The first half keeps 2 of 6 (their entries get copied out), the rest 5 of 6 (their
                # entries stay stored below the compaction point).
                acked += ids[: 4 if batch < SNAPSHOT_EVERY else 1]
            got = await client.get("kept", count=len(published))
            await client.ack_got("kept", acked)
            await client.nack_got("kept", [d.id for d in got if d.id not in set(acked)])
            for i in range(3 * SNAPSHOT_EVERY):  # two more snapshots: the batches' entries are compacted
                text = f"late-{i}"
                published.update(zip(await client.publish("kept", [text]), [text], strict=True))
            leader = (await client.queue("kept"))["leader"]
        for node in cluster.nodes:
            node.kill()
        for node in cluster.nodes:
            node.start()
        await asyncio.to_thread(wait_healthy, cluster.nodes)
        async with Client(cluster.urls) as client:
            served = {d.id: d.text for d in await client.get("kept", count=len(published), ack="auto")}
        for message_id in acked:
            del published[message_id]
        assert served == published
        cluster.node(leader).stop()
        store = NodeStore.open(cluster.node(leader).data_dir / "rocksdb")
        try:
            (group,) = [store.group(g) for g in store.group_ids() if g.endswith(".kept")]
            kept = [i for i in range(1, group.first_index()) if _stored(group, i)]
        finally:
            store.close()
        assert kept, "no entry was kept below the compaction point"
    finally:
        cluster.stop()


def _stored(group: GroupLog, index: int) -> bool:
    try:
        group.kept_entry(index)
    except CorruptionError:
        return False
    return True
