"""Old logs still replay: a node starts on a data directory written by an earlier version and holds
exactly what that version's node held (tests/fixtures/replay_v0/README.md says how it was written)."""

from __future__ import annotations

import asyncio
import json
import tarfile
from pathlib import Path
from typing import Any

from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, NodeProcess, free_ports, wait_healthy
from quorumq import Client, Delivery

FIXTURE = Path(__file__).parent.parent / "fixtures" / "replay_v0"
VOLATILE = {"leader", "online", "node", "state", "message_stats"}  # the last three added since, as RabbitMQ's
ADDED_SINCE = {
    "messages_delayed": 0,
    "dedupe_ids": 0,
    "dedupe_evicted": 0,
    "dedupe_refused": 0,
    "groups": 0,
    "groups_blocked": 0,
    "policy": None,
    "operator_policy": None,
    "vhost": "/",
    "type": "quorum",
    "durable": True,
    "auto_delete": False,
    "exclusive": False,
}
"""Counters the version that wrote the fixture did not report, with the value its logs imply."""


async def _observe(url: str) -> dict[str, Any]:
    """What the node holds, in the form `expected.json` records."""
    async with Client([url], auth=(HARNESS_USER, HARNESS_PASSWORD)) as client:
        queues = {}
        for queue in await client.queues():
            messages = await client.browse(queue["name"], limit=10000)
            queues[queue["name"]] = {
                "stats": _reported_then(queue),
                "messages": [
                    [m.id, m.body.decode("latin-1"), _counted(m), m.delivery_count] for m in messages
                ],
            }
        log = await client.consumer_log("stream", "spark", 4, 10)
        users = sorted([u["name"], sorted(u["tags"]), u.get("permissions")] for u in await client.users())
        return {"queues": queues, "spark_log": [m.id for m in log], "users": users}


def _reported_then(stats: dict[str, Any]) -> dict[str, Any]:
    """A queue's stats as that version reported them: what it did not have yet is what its logs imply
    (nothing delayed, every ready message at level 0, no policy: the arguments in force are the declared
    ones), and leaves the comparison."""
    for name, value in ADDED_SINCE.items():
        assert stats.pop(name) == value, name
    ready = stats["messages_ready"]
    assert stats.pop("messages_ready_by_priority") == ({"0": ready} if ready else {})
    assert stats.pop("effective_arguments") == stats["arguments"]
    return {k: v for k, v in stats.items() if k not in VOLATILE}


def _counted(message: Delivery) -> dict[str, Any]:
    """A message's headers as that version answered them: every return then counted a failed delivery,
    so the acquired count (which it did not report) equals the delivery count."""
    headers = dict(message.headers)
    assert message.acquired_count == message.delivery_count
    assert headers.pop("x-acquired-count", 0) == message.delivery_count
    return headers


def test_a_node_restarts_on_a_version_0_data_directory_with_everything_it_held(tmp_path: Path) -> None:
    with tarfile.open(FIXTURE / "node1.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    http_port, raft_port = free_ports(2)
    node = NodeProcess("node1", "127.0.0.1", http_port, raft_port, tmp_path / "node1", tmp_path / "node1.log")
    node.start()
    try:
        wait_healthy([node])
        observed = asyncio.run(_observe(node.url))
    finally:
        node.stop()
    expected = json.loads((FIXTURE / "expected.json").read_text())
    assert json.loads(json.dumps(observed)) == expected, node.log_path.read_text()[-3000:]
