"""The rabbitmq-queues 4.x verbs on a real 3-node cluster: grow_to_count, transfer_leadership,
force_checkpoint and check_if_new_quorum_queue_replicas_have_finished_initial_sync, with their exit
codes."""

from __future__ import annotations

import json

from membership_helpers import queues_cli

from cli.node_processes import ProcessCluster, wait_healthy
from quorumq import Client


async def test_grow_to_count_transfer_leadership_and_force_checkpoint(cluster: ProcessCluster) -> None:
    url = cluster.urls[0]
    async with Client(cluster.urls) as client:
        for name in ("verbs-a", "verbs-b"):
            await client.declare(name, {"x-quorum-initial-group-size": 1})
        await client.publish("verbs-a", [f"m{i}" for i in range(20)])
        code, out, err = await queues_cli(
            url, "grow_to_count", "3", "--queue-pattern", "^verbs-", "-f", "json"
        )
        assert code == 0, err
        rows = json.loads(out)
        assert len(rows) == 4 and all(row["result"].startswith("ok") for row in rows), rows
        for name in ("verbs-a", "verbs-b"):
            assert sorted((await client.queue(name))["members"]) == ["node1", "node2", "node3"]
        code, out, _ = await queues_cli(url, "grow_to_count", "3", "--queue-pattern", "^verbs-", "-f", "json")
        assert (code, json.loads(out)) == (0, [])  # nothing left to add
        await client.declare("verbs-c", {"x-quorum-initial-group-size": 1})
        code, out, _ = await queues_cli(
            url, "grow_to_count", "2", "--queue-pattern", "^verbs-c$", "--errors-only"
        )
        assert code == 0 and out.splitlines()[1:] == []  # the header only: no addition failed
        assert len((await client.queue("verbs-c"))["members"]) == 2

        leader = (await client.queue("verbs-a"))["leader"]
        target = next(n for n in ("node1", "node2", "node3") if n != leader)
        code, out, err = await queues_cli(
            url, "transfer_leadership", "verbs-a", target, "--formatter", "json"
        )
        assert (code, json.loads(out)) == (0, {"queue": "verbs-a", "leader": target}), err
        assert (await client.queue("verbs-a"))["leader"] == target
        code, out, _ = await queues_cli(url, "transfer_leadership", "verbs-a", "-f", "json")
        assert code == 0 and json.loads(out)["leader"] != target  # another member, chosen for us

        code, out, err = await queues_cli(
            url, "force_checkpoint", "--queue-pattern", "^verbs-a$", "-f", "json"
        )
        assert code == 0, err
        taken = json.loads(out)
        assert sorted(row["node"] for row in taken) == ["node1", "node2", "node3"]
        assert all(row["result"] in ("ok", "requested") for row in taken), taken
        statuses = (await client.members("verbs-a"))["members"]
        assert all(member["snapshot_index"] > 0 for member in statuses), statuses  # each took one

        code, out, err = await queues_cli(url, "transfer_leadership", "verbs-a", "node9")
        assert code == 70 and "node9" in err


async def test_the_initial_sync_check_passes_for_voters_and_fails_while_a_replica_is_down(
    cluster: ProcessCluster,
) -> None:
    url = cluster.urls[0]
    async with Client(cluster.urls) as client:
        await client.declare("synced", {"x-quorum-initial-group-size": 3})
        code, out, err = await queues_cli(
            url, "check_if_new_quorum_queue_replicas_have_finished_initial_sync", "node3"
        )
        assert code == 0, err
        assert "All quorum queue replicas on node node3 have finished their initial sync" in out
        cluster.node("node3").kill()
        code, out, _ = await queues_cli(
            url, "check_if_new_quorum_queue_replicas_have_finished_initial_sync", "node3", "-f", "json"
        )
        assert code == 69
        assert [row["queue"] for row in json.loads(out)["not_synced"]] == ["synced"]
        cluster.node("node3").start()
        wait_healthy([cluster.node("node3")])
        code, _, _ = await queues_cli(url, "check_if_new_quorum_queue_replicas_have_finished_initial_sync")
        assert code == 0  # the node talked to: node1
