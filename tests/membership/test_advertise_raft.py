"""Nodes that listen for Raft on every interface and advertise a host name: the name is what they
register and what peers dial, for the seeds, a restarted node and a node that joins later."""

from __future__ import annotations

import asyncio
from pathlib import Path

from membership_helpers import local_queues, registered_nodes

from cli.node_processes import NodeProcess, ProcessCluster, free_ports, plan_cluster, wait_healthy, wait_until
from quorumq import Client


def listen_everywhere_advertise_name(node: NodeProcess) -> None:
    """Make `node` listen on 0.0.0.0 and advertise `localhost` (the last --raft flag wins)."""
    node.extra_args += ["--raft", f"0.0.0.0:{node.raft_port}", "--advertise-raft", advertised(node)]


def advertised(node: NodeProcess) -> str:
    """The Raft address `node` advertises in this test."""
    return f"localhost:{node.raft_port}"


async def test_nodes_register_and_dial_the_advertised_raft_address(tmp_path: Path) -> None:
    nodes = plan_cluster(3, tmp_path)
    for node in nodes:
        listen_everywhere_advertise_name(node)
        node.seeds = [f"{n.name}@{advertised(n)}" for n in nodes]
        node.start()
    cluster = ProcessCluster(nodes)
    try:
        await asyncio.to_thread(wait_healthy, nodes)
        async with Client(cluster.urls) as client:
            await client.declare("advertised", {"x-quorum-initial-group-size": 3})
            ids = await client.publish("advertised", [f"m{i}" for i in range(20)])
            stats = await client.queue("advertised")
            follower = cluster.node(next(m for m in stats["members"] if m != stats["leader"]))
            follower.kill()
            ids += await client.publish("advertised", [f"m{i}" for i in range(20, 40)])
            follower.start()
            http_port, raft_port = free_ports(2)
            joiner = NodeProcess(
                "node4",
                "127.0.0.1",
                http_port,
                raft_port,
                tmp_path / "node4",
                tmp_path / "logs" / "node4.log",
                extra_args=["--join", cluster.urls[0]],
            )
            listen_everywhere_advertise_name(joiner)
            cluster.nodes.append(joiner)
            joiner.start()
            await asyncio.to_thread(wait_healthy, [follower, joiner])

            def follower_caught_up() -> bool:
                return local_queues(follower.url).get("advertised", {}).get("messages") == 40

            await asyncio.to_thread(wait_until, follower_caught_up, 30, "the restarted follower to catch up")
            expected = {n.name: advertised(n) for n in cluster.nodes}
            await asyncio.to_thread(
                wait_until,
                lambda: {n: r["raft"] for n, r in registered_nodes(cluster.urls[1]).items()} == expected,
                15,
                "every node to be registered under its advertised address",
            )
            served = [d.text for d in await client.get("advertised", count=50, ack="auto")]
        assert len(ids) == 40 and served == [f"m{i}" for i in range(40)]
    finally:
        cluster.stop()
