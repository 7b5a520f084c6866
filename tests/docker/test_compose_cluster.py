"""The docker-compose deployment really runs: a 3-node cluster of containers on a private network,
driven through the ports it publishes on the host, with Docker itself injecting the faults."""

from __future__ import annotations

import asyncio
import json

import pytest
from client_helpers import ConfirmedStream, take_all
from compose_project import ComposeProject
from support.eventually import eventually

pytestmark = pytest.mark.timeout(900)

DATA_DIR = "/var/lib/quorumq"


async def leader_of(cluster: ComposeProject, queue: str) -> str:
    """The node (service) name that leads `queue`."""
    async with cluster.client() as client:
        return (await client.queue(queue))["leader"]


def test_nodes_run_as_non_root_each_with_its_own_named_data_volume(cluster: ComposeProject) -> None:
    volumes = set()
    for node in cluster.nodes:
        assert cluster.exec(node, "id", "-u").stdout.strip() != "0"
        mounts = json.loads(cluster.inspect(node, "{{json .Mounts}}"))
        data = [m for m in mounts if m["Destination"] == DATA_DIR]
        assert [m["Type"] for m in data] == ["volume"]
        volumes.add(data[0]["Name"])
    assert len(volumes) == len(cluster.nodes)


def test_the_image_refuses_the_guest_inside_a_container_too(cluster: ComposeProject) -> None:
    command = ("quorumq", "--node", "127.0.0.1:8080", "queues")
    as_guest = cluster.exec("node1", *command)  # a client given no credentials sends guest:guest
    assert as_guest.returncode != 0 and "HTTP 401" in as_guest.stdout + as_guest.stderr
    as_admin = cluster.exec("node1", command[0], *cluster.admin_flags, *command[1:])
    assert as_admin.returncode == 0, as_admin.stdout + as_admin.stderr


async def test_publish_with_confirms_through_a_follower_and_consume_through_another_port(
    cluster: ComposeProject,
) -> None:
    async with cluster.client("node1") as admin:
        await admin.declare("orders")
        stats = await admin.queue("orders")
        nodes = await admin.nodes()
    assert sorted(stats["members"]) == cluster.nodes
    assert {n["name"]: n["http"] for n in nodes} == {n: f"http://{n}:8080" for n in cluster.nodes}
    followers = [node for node in cluster.nodes if node != stats["leader"]]
    # one node forwards the publish to the leader over the private network, another serves the reads
    async with (
        cluster.client(followers[0]) as first,
        cluster.client(followers[1]) as second,
    ):
        ids = await first.publish("orders", [str(i) for i in range(100)])
        assert len(set(ids)) == 100
        assert await take_all(second, "orders") == [str(i) for i in range(100)]


async def test_killed_leader_container_loses_no_confirmed_message_and_service_resumes(
    cluster: ComposeProject,
) -> None:
    async with cluster.client() as client:
        await client.declare("payments")
        leader = await leader_of(cluster, "payments")
        stream = ConfirmedStream(client, "payments")
        await stream.until_confirmed(300, timeout=30)
        await asyncio.to_thread(cluster.compose, "kill", leader)
        before_kill = len(stream.confirmed)
        await stream.until_confirmed(before_kill + 300, timeout=60)
        confirmed = await stream.stop()
        assert (await client.queue("payments"))["leader"] != leader
        await asyncio.to_thread(cluster.compose, "start", leader)
        await asyncio.to_thread(cluster.wait_health, [leader])
        consumed = {int(body) for body in await take_all(client, "payments")}
    assert confirmed - consumed == set(), "confirmed messages were lost"


async def test_disconnected_node_cannot_commit_until_it_is_reconnected(cluster: ComposeProject) -> None:
    async with cluster.client() as client:
        await client.declare("partitioned")
        await client.publish("partitioned", [str(i) for i in range(50)])
        cut = await leader_of(cluster, "partitioned")
        majority = [node for node in cluster.nodes if node != cut]
        await asyncio.to_thread(cluster.disconnect, cut)
        try:
            await asyncio.to_thread(cluster.wait_health, [cut], "unhealthy", 30)
            refused = await asyncio.to_thread(
                cluster.exec, cut, "quorumq", "--node", "127.0.0.1:8080", "--request-timeout", "5",
                *cluster.admin_flags, "publish", "partitioned", "sent-to-the-cut-node",
            )  # fmt: skip
            assert refused.returncode != 0, f"the cut node confirmed a publish: {refused.stdout}"
            assert "HTTP 401" not in refused.stdout + refused.stderr
            async with cluster.client(*majority) as majority_side:
                await majority_side.publish("partitioned", [str(i) for i in range(50, 100)])
        finally:
            await asyncio.to_thread(cluster.reconnect, cut)
        await asyncio.to_thread(cluster.wait_health, [cut])
        async with cluster.client(cut) as cut_node:

            async def cut_node_replica_has(count: int) -> bool:
                local = {q["name"]: q for q in await cut_node.queues()}
                return local.get("partitioned", {}).get("messages") == count

            await eventually(
                lambda: cut_node_replica_has(100), f"{cut} to catch up", timeout=30, interval=0.05
            )
        assert await take_all(client, "partitioned") == [str(i) for i in range(100)]


async def test_restart_of_every_node_keeps_queues_and_messages(cluster: ComposeProject) -> None:
    async with cluster.client() as client:
        await client.declare("durable-a", {"x-max-length": 1000})
        await client.declare("durable-b")
        await client.publish("durable-a", [str(i) for i in range(100)])
        await client.publish("durable-b", ["42"])
    await asyncio.to_thread(cluster.compose, "restart")
    await asyncio.to_thread(cluster.wait_health, cluster.nodes)
    async with cluster.client() as client:
        queues = {q["name"]: q for q in await client.queues()}
        assert {"durable-a", "durable-b"} <= set(queues)
        assert queues["durable-a"]["arguments"]["x-max-length"] == 1000
        assert await take_all(client, "durable-a") == [str(i) for i in range(100)]
        assert await take_all(client, "durable-b") == ["42"]


def test_docker_stop_is_a_clean_sigterm_stop_of_the_server(cluster: ComposeProject) -> None:
    took = cluster.timed("stop", "--timeout", "20", "node3")
    assert cluster.inspect("node3", "{{.State.ExitCode}}") == "0"
    assert took < 10, f"stopping took {took:.1f}s: SIGTERM did not reach the server"
