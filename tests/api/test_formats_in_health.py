"""The rolling-upgrade rule on a real in-process node: a format's newest version is written only once every
other node of the cluster (the metadata group's voters and learners) said it reads it, whichever groups
that node belongs to now (it can be added to any queue's group later)."""

from __future__ import annotations

from pathlib import Path

import msgpack
from in_process_node import in_process_node

from cluster.membership.group_changes import GroupChanges
from cluster.replication.entry_codec import QUEUE_OP_VERSION, op_bodies
from cluster.replication.stored_message import StoredMessage
from metadata_state.codec import CODEC_VERSION


async def test_a_queue_writes_version_1_only_once_every_node_of_the_cluster_reads_it(tmp_path: Path) -> None:
    async with in_process_node(tmp_path) as running:
        node = running.node
        assert node.host is not None and node.store is not None
        changes = GroupChanges(node.host, node.status.is_up)
        await changes.change("meta", changes.new_learner("older"))  # never said what it reads
        door = await running.declare("q-older-node")  # a group of one: "older" is not in it
        await door.publish([(StoredMessage(b"m", {}, "utf8"), None)], None, None)
        group_log = node.store.group(door.group)
        entries = group_log.entries(group_log.first_index(), group_log.last_index() + 1)
        ops = [op for entry in entries if entry.data for op in msgpack.unpackb(entry.data, raw=False)]
        assert [op[0] if len(op) == 4 else 0 for op in ops if op_bodies(op) is not None] == [0]
        _, health = await running.call("GET", "/api/health")
        assert health["formats"] == {
            "queue_operations": {"reads": QUEUE_OP_VERSION, "writes": 0},
            "metadata": {"reads": CODEC_VERSION, "writes": 0},
        }
