"""A node whose database is wiped rejoins as a new incarnation (finding 7 of issue 17), on real processes.

The queue's leader sees the member connect with another incarnation than its group records: it removes
the old replica and adds the new one as a learner, which catches up and is promoted; nothing confirmed
is lost, and the wiped node never counted as the voter it replaced.

The metadata group bootstraps from the seeds with unknown incarnations; its leader records them once all
three connected. A seed whose whole data directory is wiped restarts without its `node.json` and
bootstraps the metadata group from its seeds again, as a voter with an empty log: the others drop its
messages, and the metadata leader replaces it and promotes it again once it caught up.
"""

from __future__ import annotations

import asyncio
import shutil

from membership_helpers import local_queues, registered_nodes
from support.eventually import eventually

from cli.node_processes import ProcessCluster, wait_healthy, wait_until
from quorumq import Client

QUEUE = "wiped"
SEED_QUEUE = "before-the-wipe"
MESSAGES = 50


def incarnation(cluster: ProcessCluster, name: str) -> str:
    return registered_nodes(cluster.urls[0])[name]["incarnation"]


async def test_rule_a_wiped_node_rejoins_as_a_learner_and_is_promoted_losing_nothing(
    cluster: ProcessCluster,
) -> None:
    names = [n.name for n in cluster.nodes]
    await asyncio.to_thread(
        wait_until, lambda: all(incarnation(cluster, n) for n in names), 30, "registrations"
    )
    async with Client(cluster.urls) as client:
        await client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        for i in range(MESSAGES):
            await client.publish(QUEUE, [f"m{i}"])
        info = await client.queue(QUEUE)
        leader = cluster.node(info["leader"])
        wiped = next(n for n in cluster.nodes if n.name != info["leader"])
        before = incarnation(cluster, wiped.name)

        wiped.stop()
        shutil.rmtree(wiped.data_dir / "rocksdb")  # the disk is lost; node.json (its seeds) survives
        wiped.start()
        await asyncio.to_thread(wait_healthy, [wiped])
        await asyncio.to_thread(
            wait_until,
            lambda: incarnation(cluster, wiped.name) not in ("", before),
            30,
            "the new registration",
        )

        def replaced() -> bool:
            return "replaced: incarnation changed" in leader.log_path.read_text()

        await asyncio.to_thread(wait_until, replaced, 30, "the leader to replace the wiped replica")

        async def promoted() -> bool:
            rows = (await client.members(QUEUE))["members"]
            return next(r["membership"] for r in rows if r["node"] == wiped.name) == "voter"

        await eventually(promoted, "the new replica to be promoted", timeout=60, interval=0.1)
        replica = local_queues(wiped.url)[QUEUE]
        assert replica["messages_ready"] == MESSAGES, replica
        await client.publish(QUEUE, ["after"])
        got = await client.get(QUEUE, MESSAGES + 1, ack="auto")
        assert [d.body for d in got] == [f"m{i}".encode() for i in range(MESSAGES)] + [b"after"]


async def test_rule_a_wiped_seed_is_replaced_in_the_metadata_group_and_promoted_again(
    cluster: ProcessCluster,
) -> None:
    names = [n.name for n in cluster.nodes]
    async with Client(cluster.urls) as client:
        meta_leader = cluster.node((await client.health())["metadata_leader"])

        def bound() -> bool:
            return meta_leader.log_path.read_text().count("is recorded") >= len(names)

        await asyncio.to_thread(wait_until, bound, 30, "the seeds' incarnations to be recorded")
        await client.declare(SEED_QUEUE, {"x-quorum-initial-group-size": 1})
        wiped = next(n for n in cluster.nodes if n is not meta_leader)
        before = registered_nodes(meta_leader.url)[wiped.name]["incarnation"]

        wiped.stop()
        shutil.rmtree(wiped.data_dir)  # everything is lost, node.json included: it bootstraps from its seeds
        wiped.start()
        await asyncio.to_thread(wait_healthy, [wiped])

        def promoted_after_replacement() -> bool:
            text = meta_leader.log_path.read_text()
            replaced = text.find(f"{wiped.name} replaced: incarnation changed")
            return replaced >= 0 and f"node {wiped.name} promoted to voter" in text[replaced:]

        await asyncio.to_thread(wait_until, promoted_after_replacement, 60, "replacement and promotion")
        await asyncio.to_thread(
            wait_until,
            lambda: registered_nodes(meta_leader.url)[wiped.name]["incarnation"] not in ("", before),
            30,
            "the new registration",
        )
        assert SEED_QUEUE in local_queues(wiped.url)  # its metadata replica caught up with the cluster
