"""A group whose replica cannot read a committed entry halts on that node, and the node says so (issue 37,
finding 8): `/api/health` lists it under `groups_halted` (index and reason), the replica's own status
(`GET /api/queues/{q}/members/{node}`) carries `halted`, and a node whose metadata group halted is not
healthy (503, status `halted`): its view of the cluster no longer moves.

A one-node cluster in this process; the unreadable entry is proposed through the node's Raft host, as a
leader of a later version would have written it."""

from __future__ import annotations

from pathlib import Path

import pytest
from in_process_node import in_process_node
from support.eventually import eventually

from cluster.node import META_GROUP
from cluster.replication.entry_codec import QUEUE_OP_VERSION
from cluster.replication.proposals import ProposalFailed


async def test_rule_a_halted_queue_group_is_listed_in_health_and_in_its_replicas_status(
    tmp_path: Path,
) -> None:
    async with in_process_node(tmp_path) as running:
        door = await running.declare("h-later")
        host = running.node.host
        assert host is not None
        with pytest.raises(ProposalFailed, match="halted"):
            await host.submit(door.group, [QUEUE_OP_VERSION + 1, 1, ["purge", {}], None])
        index = host.groups[door.group].applied + 1

        status, health = await running.call("GET", "/api/health")
        assert status == 200  # the node serves its other groups
        [halted] = health["groups_halted"]
        assert halted["group"] == door.group and halted["index"] == index
        assert "not a queue operation" in halted["reason"]
        status, replica = await running.call("GET", f"/api/queues/h-later/members/{running.node.name}")
        assert status == 200 and replica["halted"] == {"index": index, "reason": halted["reason"]}
        status, _ = await running.call(
            "POST", "/api/queues/h-later/messages", json={"messages": [{"body": "x"}]}
        )
        assert status == 503  # the queue's only replica leads nothing any more


async def test_rule_a_node_whose_metadata_group_halted_is_not_healthy(tmp_path: Path) -> None:
    async with in_process_node(tmp_path) as running:
        host = running.node.host
        assert host is not None
        with pytest.raises(ProposalFailed, match="halted"):
            await host.submit(META_GROUP, [99, "a_later_command", {}])
        await eventually(lambda: running.node.status.readiness() == "halted", "the node to say it halted")
        status, health = await running.call("GET", "/api/health")
        assert (status, health["status"]) == (503, "halted")
        assert [halted["group"] for halted in health["groups_halted"]] == [META_GROUP]
