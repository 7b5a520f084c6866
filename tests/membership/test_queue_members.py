"""Replica sets of queues on a real 5-node cluster: grow, shrink, replace, rebalance, refusals."""

from __future__ import annotations

import asyncio
import json

from membership_helpers import Load, hosts_replica, local_queues, queues_cli

from cli.node_processes import ProcessCluster, wait_until
from quorumq import Client, ConflictError

MAX_PAUSE_S = 8.0


async def test_growing_to_five_and_shrinking_to_three_under_load_loses_no_confirmed_message(
    five: ProcessCluster,
) -> None:
    async with Client(five.urls) as client:
        await client.declare("grown", {"x-quorum-initial-group-size": 3})
        info = await client.queue("grown")
        original, leader = info["members"], info["leader"]
        extra = [n.name for n in five.nodes if n.name not in original]
        async with Load(five.urls, "grown") as load:
            await load.until_confirmed(200)
            for node in extra:
                grow = ("grow", node, "all", "--queue-pattern", "^grown$")
                code, out, err = await queues_cli(five.urls[0], *grow)
                assert code == 0, err
                assert "grown" in out and "ok" in out
            await load.until_confirmed(200)
            status = await client.members("grown")
            assert sorted(m["node"] for m in status["members"]) == sorted(n.name for n in five.nodes)
            assert {m["membership"] for m in status["members"]} == {"voter"}
            removed = [leader, next(m for m in original if m != leader)]
            for node in removed:
                code, _, err = await queues_cli(five.urls[0], "delete_member", "grown", node)
                assert code == 0, err
            await load.until_confirmed(200)
        assert load.lost() == set()
        assert load.max_gap_s < MAX_PAUSE_S
        info = await client.queue("grown")
        assert sorted(info["members"]) == sorted(set(original + extra) - set(removed))
        assert info["leader"] not in removed


async def test_replacing_a_node_under_load_moves_every_message_to_the_newcomer(five: ProcessCluster) -> None:
    async with Client(five.urls) as client:
        await client.declare("replaced", {"x-quorum-initial-group-size": 3})
        info = await client.queue("replaced")
        newcomer = next(n for n in five.nodes if n.name not in info["members"])
        old = next(m for m in info["members"] if m != info["leader"])
        async with Load(five.urls, "replaced") as load:
            await load.until_confirmed(300)
            assert (await client.add_member("replaced", newcomer.name))["members"][-1] == newcomer.name
            await client.delete_member("replaced", old)
            await load.until_confirmed(300)
        assert load.lost() == set()
        assert load.max_gap_s < MAX_PAUSE_S
        await client.publish("replaced", ["after"])
        leader_view = (await client.queue("replaced"))["messages"]

        def newcomer_caught_up() -> bool:
            return local_queues(newcomer.url).get("replaced", {}).get("messages") == leader_view

        assert hosts_replica(newcomer.url, "replaced", newcomer.name)
        await asyncio.to_thread(wait_until, newcomer_caught_up, 10, "the new replica to catch up")
        old_url = five.node(old).url
        await asyncio.to_thread(
            wait_until, lambda: not hosts_replica(old_url, "replaced", old), 10, "the old replica to go"
        )


async def test_rebalance_spreads_leaders_that_one_node_held(five: ProcessCluster) -> None:
    names = [f"bal{i}" for i in range(5)]
    async with Client([five.urls[0]]) as through_node1:
        for name in names:  # client-local placement: node1 leads every one of them
            await through_node1.declare(name, {"x-quorum-initial-group-size": 5})
        leaders = [(await through_node1.queue(name))["leader"] for name in names]
        assert leaders == ["node1"] * 5
        rebalance = ("--formatter", "json", "rebalance", "--queue-pattern", "^bal")
        code, out, err = await queues_cli(five.urls[1], *rebalance)
        assert code == 0, err
        report = json.loads(out)
        assert report["failures"] == []
        assert {r["node"]: r["leaders_before"] for r in report["nodes"]}["node1"] == 5
        assert {r["leaders_after"] for r in report["nodes"]} == {1}  # ceil(5 queues / 5 nodes)
        after = sorted([(await through_node1.queue(name))["leader"] for name in names])
        assert after == sorted(n.name for n in five.nodes)


async def test_quorum_status_lists_every_member_with_its_raft_state(five: ProcessCluster) -> None:
    async with Client(five.urls) as client:
        await client.declare("status", {"x-quorum-initial-group-size": 3})
        await client.publish("status", ["a", "b"])
    code, out, err = await queues_cli(five.urls[4], "--formatter", "json", "quorum_status", "status")
    assert code == 0, err
    rows = json.loads(out)
    assert sorted(r["raft_state"] for r in rows) == ["follower", "follower", "leader"]
    assert {r["membership"] for r in rows} == {"voter"}
    leader = next(r for r in rows if r["raft_state"] == "leader")
    assert leader["commit_index"] == leader["last_log_index"] >= 2
    assert all(r["repairing"] is None and r["counted"] for r in rows)  # issue 17, finding 6
    code, out, _ = await queues_cli(five.urls[4], "quorum_status", "status")
    assert "Raft State" in out and "Snapshot Index" in out and "Repairing" in out


async def test_membership_errors_name_the_problem(five: ProcessCluster) -> None:
    url = five.urls[2]
    code, _, err = await queues_cli(url, "add_member", "no-such-queue", "node2")
    assert (code, "not_found") == (70, err.split("(")[-1].rstrip(")\n"))
    async with Client(five.urls) as client:
        await client.declare("single", {"x-quorum-initial-group-size": 1})
        (only,) = (await client.queue("single"))["members"]
        code, _, err = await queues_cli(url, "add_member", "single", "node9")
        assert code == 70 and "node 'node9' is not a member of the cluster" in err
        code, _, err = await queues_cli(url, "delete_member", "single", only)
        assert code == 70 and "(last_node)" in err
        others = [n.name for n in five.nodes if n.name != only][:2]
        outcomes = await asyncio.gather(
            *(client.add_member("single", node) for node in others), return_exceptions=True
        )
        refused = [o for o in outcomes if isinstance(o, ConflictError)]
        assert len(refused) == 1 and refused[0].code == "change_in_progress"
        code, _, err = await queues_cli(url, "delete_member", "single", "node9")
        assert code == 70 and "not a member of queue 'single'" in err
