"""Node-level queue defaults on a real 3-node cluster (issue 22, feature 9): a queue declared through a
node without those arguments gets that node's defaults in its stored arguments (group size, leader
locator, delivery limit), which every replica then applies; a redeclare without them finds it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli as quorumq
from cli.node_processes import ProcessCluster
from quorumq import Client

DEFAULTS = {
    "QUORUMQ_DEFAULT_GROUP_SIZE": "2",
    "QUORUMQ_DEFAULT_LEADER_LOCATOR": "balanced",
    "QUORUMQ_DEFAULT_DELIVERY_LIMIT": "1",
    "QUORUMQ_DEAD_LETTER_PREFETCH": "4",
}


@pytest.fixture
def defaulting(tmp_path: Path) -> Iterator[ProcessCluster]:
    running = ProcessCluster.start(tmp_path, count=3, env=DEFAULTS)
    yield running
    running.stop()


async def test_a_queue_declared_without_arguments_takes_the_nodes_defaults(
    defaulting: ProcessCluster,
) -> None:
    result = CliRunner().invoke(
        quorumq, ["--node", defaulting.urls[1], "--formatter", "json", "declare", "jobs"]
    )
    assert result.exit_code == 0, result.output
    async with Client(defaulting.urls, timeout=30.0) as client:
        queue = await client.queue("jobs")
        assert queue["arguments"] == {
            "x-queue-type": "quorum",
            "x-quorum-initial-group-size": 2,
            "x-queue-leader-locator": "balanced",
            "x-delivery-limit": 1,
        }
        assert len(queue["members"]) == 2
        await client.declare("jobs")  # the same defaults again: it exists
        await client.publish("jobs", ["poison"])
        for _ in range(2):  # the stored limit of 1 holds on the leader, whichever node it is
            (got,) = await client.get("jobs", count=1, ack="manual")
            await client.nack_got("jobs", [got.id], requeue=True)
        stats = await client.queue("jobs")
    assert (stats["messages"], stats["dropped"]) == (0, {"delivery_limit": 1})
