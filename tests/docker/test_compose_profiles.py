"""The compose variants: a fresh 5-node cluster, a node added to a running cluster with --join, and
the Spark example job run by the `spark` profile against the cluster."""

from __future__ import annotations

import asyncio
import json

import pytest
from client_helpers import take_all
from compose_project import (
    BASE_FILE,
    BUILD_TIMEOUT_S,
    FIVE_FILE,
    JOIN_FILE,
    REPO,
    ComposeProject,
    ProjectFactory,
    run,
)
from support.eventually import eventually

from quorumq import Client

pytestmark = pytest.mark.timeout(900)

THREE_NODES = ["node1", "node2", "node3"]
FIVE_NODES = [*THREE_NODES, "node4", "node5"]
SPARK_EXAMPLE = REPO / "examples" / "spark_pipeline.py"


async def test_five_node_override_starts_one_cluster_of_five(new_project: ProjectFactory) -> None:
    project = new_project(FIVE_NODES, [BASE_FILE, FIVE_FILE])
    await asyncio.to_thread(project.up)
    await asyncio.to_thread(project.wait_health, project.nodes)
    async with project.client() as client:
        assert sorted(n["name"] for n in await client.nodes()) == FIVE_NODES
        await client.declare("wide", {"x-quorum-initial-group-size": 5})
        assert sorted((await client.queue("wide"))["members"]) == FIVE_NODES
    async with project.client("node5") as fifth, project.client("node4") as fourth:
        await fifth.publish("wide", ["a", "b"])
        assert await take_all(fourth, "wide") == ["a", "b"]


async def test_node_added_later_joins_and_a_queue_grows_onto_it(new_project: ProjectFactory) -> None:
    project = new_project([*THREE_NODES, "node4"], [BASE_FILE, JOIN_FILE])
    await asyncio.to_thread(project.up, *THREE_NODES)
    await asyncio.to_thread(project.wait_health, THREE_NODES)
    async with project.client(*THREE_NODES) as client:
        await client.declare("grown")
        await client.publish("grown", [str(i) for i in range(20)])
        await asyncio.to_thread(project.up, "node4")
        await asyncio.to_thread(project.wait_health, ["node4"])
        await client.add_member("grown", "node4")
    async with project.client("node4") as fourth:

        async def fourth_replica_has_everything() -> bool:
            local = {q["name"]: q for q in await fourth.queues()}
            return local.get("grown", {}).get("messages") == 20

        await eventually(
            fourth_replica_has_everything, "node4's replica to catch up", timeout=30, interval=0.05
        )
        assert "node4" in (await fourth.queue("grown"))["members"]


async def _running_with_the_spark_image(new_project: ProjectFactory) -> ComposeProject:
    """A 3-node project, healthy, with the Spark image built as docs/use/docker.md says."""
    project = new_project(THREE_NODES, [BASE_FILE])
    spark_wheels = [REPO / "scripts/build-docker-wheels.sh", "--spark"]
    await asyncio.to_thread(run, spark_wheels, timeout=BUILD_TIMEOUT_S)
    await asyncio.to_thread(project.compose, "--profile", "spark", "build", "spark", timeout=BUILD_TIMEOUT_S)
    await asyncio.to_thread(project.up)
    await asyncio.to_thread(project.wait_health, project.nodes)
    return project


async def _publish_orders(client: Client, count: int) -> None:
    await client.declare("orders")
    await client.declare("order-totals")
    orders = [{"order": f"o-{i}", "items": [{"price": 2.5, "qty": i}]} for i in range(1, count + 1)]
    await client.publish("orders", [json.dumps(order) for order in orders])


async def _each_total_once(client: Client, count: int) -> None:
    totals = {t["order"]: t["total"] for t in map(json.loads, await take_all(client, "order-totals"))}
    assert totals == {f"o-{i}": 2.5 * i for i in range(1, count + 1)}
    assert (await client.queue("orders"))["messages"] == 0


@pytest.mark.slow
async def test_spark_profile_runs_the_example_pipeline_against_the_cluster(
    new_project: ProjectFactory,
) -> None:
    if not SPARK_EXAMPLE.exists():
        pytest.skip(f"{SPARK_EXAMPLE.relative_to(REPO)} is not there yet")
    project = await _running_with_the_spark_image(new_project)
    async with project.client() as client:
        await _publish_orders(client, 20)
        await asyncio.to_thread(
            project.compose, "--profile", "spark", "run", "--rm", "spark",
            "/opt/quorumq/examples/spark_pipeline.py",
            "--nodes=http://node1:8080,http://node2:8080,http://node3:8080",
            "--checkpoint=/var/lib/quorumq/checkpoint", "--output=/var/lib/quorumq/order-totals",
            "--trigger=available-now", timeout=BUILD_TIMEOUT_S,
        )  # fmt: skip
        await _each_total_once(client, 20)


@pytest.mark.slow
async def test_spark_cluster_profile_runs_the_pipeline_on_the_standalone_workers(
    new_project: ProjectFactory,
) -> None:
    project = await _running_with_the_spark_image(new_project)
    cluster = ("spark-master", "spark-worker-1", "spark-worker-2")
    try:
        await asyncio.to_thread(
            project.compose, "--profile", "spark-cluster", "up", "-d", "--no-build", *cluster
        )
        async with project.client() as client:
            await _publish_orders(client, 40)
            await asyncio.to_thread(
                project.compose, "--profile", "spark-cluster", "run", "--rm", "spark-driver",
                "/opt/quorumq/examples/spark_pipeline.py", "--master=spark://spark-master:7077",
                "--nodes=http://node1:8080,http://node2:8080,http://node3:8080",
                "--checkpoint=/var/lib/quorumq/checkpoint", "--output=/var/lib/quorumq/order-totals",
                "--trigger=available-now", "--max-messages=10", timeout=BUILD_TIMEOUT_S,
            )  # fmt: skip
            await _each_total_once(client, 40)
        for worker in cluster[1:]:  # each worker ran an executor of the pipeline
            logs = await asyncio.to_thread(project.compose, "--profile", "spark-cluster", "logs", worker)
            assert "Asked to launch executor" in logs.stdout, logs.stdout[-3000:]
    finally:
        await asyncio.to_thread(project.compose, "--profile", "spark-cluster", "down", "-v", check=False)
