"""Cluster membership on a real 3-node cluster: a 4th node joins with --join, a lost node is forgotten.

The tests of this module run in order on one cluster (auto_remove on): the join comes first, the
node killed for the quorum-critical check is the one forgotten last.
"""

from __future__ import annotations

import asyncio
import os

from click.testing import CliRunner
from membership_helpers import (
    AUTO_REMOVE,
    hosts_replica,
    local_queues,
    node_statuses,
    queues_cli,
    registered_nodes,
    run_queues_cli,
)

from cli.app import cli as quorumq_cli
from cli.node_processes import NodeProcess, ProcessCluster, free_ports, wait_healthy, wait_until
from quorumq import Client


def joining_node(cluster: ProcessCluster, name: str) -> NodeProcess:
    """A node that joins `cluster` through its first member's HTTP address."""
    http_port, raft_port = free_ports(2)
    data_dir = cluster.nodes[0].data_dir.parent
    return NodeProcess(
        name,
        "127.0.0.1",
        http_port,
        raft_port,
        data_dir / name,
        data_dir / "logs" / f"{name}.log",
        extra_args=["--join", cluster.urls[0]],
        env={**os.environ, **AUTO_REMOVE},
    )


def members(url: str, queue: str) -> list[str]:
    """A queue's members as the node at `url` reports them."""
    return local_queues(url)[queue]["members"]


async def test_every_node_registers_its_incarnation(three: ProcessCluster) -> None:
    """Each node's incarnation, as every node lists it (issue 17, finding 7)."""

    def incarnations() -> dict[str, str]:
        return {name: n["incarnation"] for name, n in registered_nodes(three.urls[0]).items()}

    await asyncio.to_thread(
        wait_until, lambda: len(set(incarnations().values()) - {""}) == 3, 30, "incarnations registered"
    )
    assert all(len(inc) == 32 for inc in incarnations().values())
    assert {name: n["incarnation"] for name, n in registered_nodes(three.urls[2]).items()} == incarnations()


async def test_joined_node_gets_metadata_then_replicas_by_grow_and_target_size(three: ProcessCluster) -> None:
    url = three.urls[1]
    async with Client(three.urls) as client:
        await client.declare("existing", {"x-quorum-initial-group-size": 3})
        await client.publish("existing", [str(i) for i in range(100)])
        await client.declare("targeted", {"x-quorum-initial-group-size": 3, "x-quorum-target-group-size": 4})
    node4 = joining_node(three, "node4")
    three.nodes.append(node4)
    node4.start()
    await asyncio.to_thread(wait_healthy, [node4])
    assert "node4" in node_statuses(url)

    def grown() -> bool:  # node4 may receive replicas once it is a voter of the metadata group
        code, out, _ = run_queues_cli(url, "grow", "node4", "all", "--queue-pattern", "^existing$")
        return code == 0 and "ok" in out

    await asyncio.to_thread(wait_until, grown, 15, "node4 to be promoted and grown onto", [node4])
    assert hosts_replica(node4.url, "existing", "node4")
    assert local_queues(node4.url)["existing"]["messages"] == 100
    await asyncio.to_thread(
        wait_until, lambda: "node4" in members(url, "targeted"), 15, "targeted to grow onto node4"
    )
    assert len(members(url, "targeted")) == 4
    node4.stop()
    node4.start()  # later starts come from the data dir, without joining again
    await asyncio.to_thread(wait_healthy, [node4])
    assert local_queues(node4.url)["existing"]["messages"] == 100


async def test_quorum_critical_node_is_reported_and_its_removal_refused(three: ProcessCluster) -> None:
    async with Client(three.urls) as client:
        await client.declare("critical", {"x-quorum-initial-group-size": 3})
        down, critical = (await client.queue("critical"))["members"][::-1][:2]
    three.node(down).kill()
    url = three.node(critical).url
    await asyncio.to_thread(
        wait_until, lambda: node_statuses(url)[down] == "down", 10, f"{down} to be seen down"
    )
    code, out, _ = await queues_cli(url, "check_if_node_is_quorum_critical", critical)
    assert code == 69
    assert f"quorum queue 'critical' in vhost '/' will become unavailable if node {critical} stops" in out
    code, _, err = await queues_cli(url, "delete_member", "critical", critical)
    assert code == 70 and "(no_quorum)" in err


async def test_forgotten_node_leaves_the_cluster_and_loses_its_replicas(three: ProcessCluster) -> None:
    down = next(n for n in three.nodes if not n.running)
    alive = next(n for n in three.nodes if n.running)
    code, out = quorumq(alive.url, "cluster", "forget", alive.name)
    assert code == 1 and "running" in out
    code, out = quorumq(alive.url, "cluster", "forget", down.name)
    assert code == 0, out
    assert down.name not in node_statuses(alive.url)

    def replicas_removed() -> bool:
        return all(down.name not in q["members"] for q in local_queues(alive.url).values())

    await asyncio.to_thread(wait_until, replicas_removed, 15, f"{down.name}'s replicas to be removed")
    async with Client([alive.url]) as client:
        assert len(await client.publish("critical", ["still available"])) == 1


def quorumq(url: str, *args: str) -> tuple[int, str]:
    """Run `quorumq --node URL ARGS...`; returns (exit code, output)."""
    result = CliRunner().invoke(quorumq_cli, ["--node", url, *args])
    return result.exit_code, result.output
