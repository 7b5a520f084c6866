"""A node whose database is damaged at rest sets it aside and rejoins as a new incarnation (decision 0011).

Real processes: a 3-node cluster confirms messages, one node stops (cleanly, so its data is in table
files, or by SIGKILL, so the newest is in the write-ahead log), one of its RocksDB files is damaged and
synced, and it starts again. It must come up, say what happened in its health, keep the damaged copy, be
replaced in the metadata group and the queue's group by their leaders, and lose nothing confirmed.
While it is a new incarnation it acknowledges nothing: with a second node down, nothing is confirmed.
"""

from __future__ import annotations

import asyncio
import json
import random
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from membership_helpers import FAST_RECONCILE, local_queues, registered_nodes

from api.client import QuorumqClient, QuorumqError
from cli.node_processes import NodeProcess, ProcessCluster, wait_healthy, wait_until
from jepsen_tests.file_damage import damage_file, damageable_files

QUEUE = "damaged"
MESSAGES = 40
REPAIR_TIMEOUT_S = 60.0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ProcessCluster]:
    running = ProcessCluster.start(tmp_path, 3, env=FAST_RECONCILE)
    try:
        yield running
    except BaseException:
        print(running.log_tails())
        raise
    finally:
        running.stop()


def health(node: NodeProcess) -> dict[str, Any]:
    """The node's health body, whatever its status code (503 while it has no quorum)."""
    try:
        with urllib.request.urlopen(f"{node.url}/api/health", timeout=5) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as exc:
        return json.load(exc)


def damage(node: NodeProcess, suffix: str, kind: str) -> Path:
    """Damage the largest database file of `node` whose name ends with `suffix` (node stopped)."""
    files = [p for p in damageable_files(node.data_dir / "rocksdb") if p.name.endswith(suffix)]
    assert files, f"no *{suffix} file in {node.data_dir}"
    target = max(files, key=lambda p: p.stat().st_size)
    before = target.read_bytes()
    damage_file(target, kind, random.Random(7))
    assert target.read_bytes() != before, "the damage changed nothing"
    return target


async def publish_all(client: QuorumqClient, prefix: str) -> None:
    for i in range(MESSAGES):
        await client.publish(QUEUE, [f"{prefix}{i}"])


async def repaired(victim: NodeProcess) -> None:
    await asyncio.to_thread(
        wait_until, lambda: health(victim).get("damage", {}).get("repairing") is False, REPAIR_TIMEOUT_S,
        "the new incarnation to be rebound in every group",
    )


CASES = {
    "wal-bitflip": ("kill", ".log", "bitflip"),
    "sst-bitflip": ("stop", ".sst", "bitflip"),
    "manifest-zero": ("stop", "", "zero"),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_damaged_store_is_set_aside_and_the_node_rejoins_as_a_new_incarnation_losing_nothing(
    cluster: ProcessCluster, case: str
) -> None:
    how, suffix, kind = CASES[case]
    async with QuorumqClient(cluster.urls) as client:
        await client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        await publish_all(client, "m")
        victim = cluster.node((await client.health())["metadata_leader"])  # leads the metadata group
        before = registered_nodes(victim.url)[victim.name]["incarnation"]
        victim.kill() if how == "kill" else victim.stop()
        if case == "manifest-zero":
            (target,) = [p for p in damageable_files(victim.data_dir / "rocksdb") if p.name.startswith("MANIFEST")]
            damage_file(target, kind, random.Random(7))
        else:
            target = damage(victim, suffix, kind)
        victim.start()
        await asyncio.to_thread(wait_healthy, [victim], 60)
        found = health(victim)["damage"]
        assert "Corruption" in found["reason"], found
        assert (Path(found["moved_to"]) / target.name).exists(), found  # kept, never deleted
        await repaired(victim)
        assert registered_nodes(victim.url)[victim.name]["incarnation"] not in ("", before)
        await asyncio.to_thread(
            wait_until, lambda: local_queues(victim.url)[QUEUE]["messages_ready"] == MESSAGES, 30,
            "the new replica to hold every message",
        )
        got = await client.get(QUEUE, MESSAGES, ack="auto")
        assert sorted(d.body for d in got) == sorted(f"m{i}".encode() for i in range(MESSAGES))


async def test_damaged_store_acknowledges_nothing_until_rebound_and_quorum_status_says_so(
    cluster: ProcessCluster,
) -> None:
    async with QuorumqClient(cluster.urls, timeout=5.0) as client:
        await client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        await publish_all(client, "m")
        leader = cluster.node((await client.queue(QUEUE))["leader"])
        victim, down = [n for n in cluster.nodes if n is not leader]
        down.stop()
        victim.kill()
        damage(victim, ".log", "bitflip")
        victim.start()
        await asyncio.to_thread(
            wait_until, lambda: health(victim).get("damage", {}).get("repairing") is True, 30, "damage reported"
        )
        async with QuorumqClient([leader.url], timeout=3.0) as lonely:
            with pytest.raises(QuorumqError):  # the new incarnation counts for no commit
                await lonely.publish(QUEUE, ["never-confirmed"])
            rows = {r["node"]: r for r in (await lonely.members(QUEUE))["members"]}
        assert rows[victim.name]["replaced"] == "incarnation changed", rows
        down.start()
        await repaired(victim)
        got = await client.get(QUEUE, MESSAGES + 1, ack="auto")
        bodies = {d.body for d in got}
        assert {f"m{i}".encode() for i in range(MESSAGES)} <= bodies, bodies
