"""What a restarting node hosts while it replays the metadata log (finding 1 of issue 37).

A restart applies the metadata tail in rounds (`RaftHost.apply_bytes_per_round`) and the node reconciles
what it hosts between them, so it sees metadata states older than the one it had reached: a removal
later undone, a queue that no longer exists. Real nodes (RocksDB, TCP, Raft) run in this process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from in_process_cluster import InProcessCluster, metadata_leader, raft_group, settled_leader
from support.eventually import eventually

from cluster.node import META_GROUP
from cluster.replication.raft_host import APPLY_BYTES_PER_ROUND, RaftHost
from cluster.replication.stored_message import StoredMessage

QUEUE = "replayed"
FILLER_BYTES = 100_000
FILLERS = APPLY_BYTES_PER_ROUND * 3 // 2 // FILLER_BYTES  # more metadata than one apply round
CONFIRMED = 20


async def test_rule_a_restart_keeps_a_replica_removed_and_added_again_in_the_metadata_it_replays(
    tmp_path: Path,
) -> None:
    """Queue on {a, b, c}, in b's metadata snapshot; b removed and added again with more than one
    apply round of other metadata between; c stopped; messages confirmed by {a, b}; a lost for good;
    b restarted; c started: the messages are still there (b did not drop its replica while it
    replayed the removal, nor gave its vote from an empty one)."""
    cluster = InProcessCluster(tmp_path, ("n1", "n2", "n3"))
    nodes = await cluster.start_all()
    try:
        await metadata_leader(nodes).directory.declare(
            QUEUE, {"x-quorum-initial-group-size": 3}, client_node="n1"
        )
        gid = nodes["n1"].directory.info(QUEUE).group
        await eventually(lambda: settled_leader(nodes, gid) is not None, f"a leader of {QUEUE}")
        a = settled_leader(nodes, gid)
        assert a is not None
        b, c = (nodes[m] for m in a.directory.info(QUEUE).members if m != a.name)
        assert b.host is not None
        b.host.checkpoint(META_GROUP)  # b's metadata snapshot lists b

        await a.membership.queues.delete(QUEUE, b.name)
        await eventually(lambda: QUEUE not in b.queues, f"{b.name} to drop its replica")
        for i in range(FILLERS):
            await metadata_leader(nodes).metadata_door.put_user(f"filler-{i}", "x" * FILLER_BYTES, [])
        await a.membership.queues.add(QUEUE, b.name)
        assert b.name in raft_group(a, gid).raft.status().conf.voters

        await cluster.stop(c.name)
        bodies = [(StoredMessage(str(i).encode(), {}, "utf8"), None) for i in range(CONFIRMED)]
        assert len((await a.queues[QUEUE].publish(bodies, None, None)).ids) == CONFIRMED
        await cluster.stop(a.name)  # lost for good
        await cluster.stop(b.name)
        await cluster.start(b.name)
        await cluster.start(c.name)

        await eventually(lambda: settled_leader(cluster.nodes, gid) is not None, f"a new leader of {QUEUE}")
        leader = settled_leader(cluster.nodes, gid)
        assert leader is not None
        assert leader.queues[QUEUE].stats().messages == CONFIRMED
    finally:
        await cluster.stop_all()


async def test_rule_a_restart_does_not_create_a_queue_deleted_after_the_metadata_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metadata snapshot still declares the queue, its log deletes it: a restart opens no group for
    it (before, it bootstrapped one as voters until the deletion was replayed: a ghost queue)."""
    cluster = InProcessCluster(tmp_path, ("n1",))
    node = (await cluster.start_all())["n1"]
    try:
        await node.directory.declare(QUEUE, {}, client_node="n1")
        gid = node.directory.info(QUEUE).group
        await eventually(lambda: settled_leader(cluster.nodes, gid) is node, f"{QUEUE} led")
        assert node.host is not None
        node.host.checkpoint(META_GROUP)
        await node.directory.delete(QUEUE)
        await eventually(lambda: QUEUE not in node.queues, f"{QUEUE} to be dropped")
        await cluster.stop("n1")

        opened: list[str] = []
        open_group = RaftHost.open_group

        def recording_open_group(host: RaftHost, gid: str, *args, **kwargs):  # type: ignore[no-untyped-def]
            opened.append(gid)
            return open_group(host, gid, *args, **kwargs)

        monkeypatch.setattr(RaftHost, "open_group", recording_open_group)
        node = await cluster.start("n1")
        await eventually(lambda: node.status.meta_leader() is not None, "a metadata leader")
        await eventually(
            lambda: QUEUE not in node.metadata.queues and not node._reconcile_scheduled,
            "the deletion replayed",
        )
        assert node.store is not None
        assert gid not in opened and gid not in node.store.group_ids() and QUEUE not in node.queues
    finally:
        await cluster.stop_all()
