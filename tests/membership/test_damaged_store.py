"""A node whose database is damaged at rest sets it aside and rejoins as a new incarnation (decision 0011).

Real processes: a 3-node cluster confirms messages, one node stops (cleanly, so its data is in table
files, or by SIGKILL, so the newest is in the write-ahead log), one of its RocksDB files is damaged and
synced, and it starts again. It must come up, say what happened in its health, keep the damaged copy, be
replaced in the metadata group and the queue's group by their leaders, and lose nothing confirmed.
While it is a new incarnation it acknowledges nothing: with a second node down, nothing is confirmed.
Damage outside what recovery reads is found by the read of the whole database after the node serves
(decision 0016): the node exits 75, and the harness, as a supervisor, starts it again.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import urllib.error
import urllib.request
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from membership_helpers import local_queues, registered_nodes
from support.eventually import eventually

from cli.node_processes import NodeProcess, ProcessCluster, wait_healthy, wait_until
from jepsen_tests.file_damage import damage_file, damageable_files
from quorumq import Client, QuorumqError
from raft_log.storage.rocksdb_database import RocksDatabase

QUEUE = "damaged"
MESSAGES = 40
REPAIR_TIMEOUT_S = 60.0


def health(node: NodeProcess) -> dict[str, Any]:
    """The node's health body, whatever its status code (503 while it has no quorum)."""
    try:
        with urllib.request.urlopen(f"{node.url}/api/health", timeout=5) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as exc:
        return json.load(exc)


def repairing(node: NodeProcess) -> bool | None:
    """The `repairing` flag of the node's reported damage; None when it reports none (or is down)."""
    try:
        return (health(node).get("damage") or {}).get("repairing")
    except OSError:
        return None


def damage(node: NodeProcess, pattern: str, kind: str) -> Path:
    """Damage the largest database file of `node` whose name matches `pattern` (node stopped)."""
    files = [p for p in damageable_files(node.data_dir / "rocksdb") if fnmatch(p.name, pattern)]
    assert files, f"no {pattern} file in {node.data_dir}"
    target = max(files, key=lambda p: p.stat().st_size)
    before = target.read_bytes()
    damage_file(target, kind, random.Random(7))
    assert target.read_bytes() != before, "the damage changed nothing"
    return target


def reported_damage(node: NodeProcess) -> dict[str, Any] | None:
    """The damage the node reports; None when it reports none (or is down, or restarting)."""
    try:
        return health(node).get("damage")
    except OSError:
        return None


async def damage_reported(node: NodeProcess) -> dict[str, Any]:
    """Wait until the node reports damage: found at open, or by the read-through after it (then the node
    exits 75 and is started again)."""
    await asyncio.to_thread(wait_until, lambda: reported_damage(node) is not None, 60, "the damage", [node])
    found = reported_damage(node)
    assert found is not None
    return found


async def publish_all(client: Client, prefix: str) -> None:
    for i in range(MESSAGES):
        await client.publish(QUEUE, [f"{prefix}{i}"])


async def repaired(victim: NodeProcess) -> None:
    await asyncio.to_thread(
        wait_until,
        lambda: repairing(victim) is False,
        REPAIR_TIMEOUT_S,
        "the new incarnation to be rebound in every group",
    )


@pytest.fixture(autouse=True)
def supervised(cluster: ProcessCluster) -> None:
    """Damage the store check finds while a node serves makes it exit 75 (decision 0016): these nodes are
    started again after it, as compose does (elsewhere an exit 75 is a node that stopped)."""
    for node in cluster.nodes:
        node.supervised = True


CASES = {
    "wal-bitflip": ("kill", "*.log", "bitflip"),
    "sst-bitflip": ("stop", "*.sst", "bitflip"),
    "manifest-zero": ("stop", "MANIFEST-*", "zero"),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_damaged_store_is_set_aside_and_the_node_rejoins_as_a_new_incarnation_losing_nothing(
    cluster: ProcessCluster, case: str
) -> None:
    how, pattern, kind = CASES[case]
    async with Client(cluster.urls) as client:
        await client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        await publish_all(client, "m")
        victim = cluster.node((await client.health())["metadata_leader"])  # leads the metadata group
        before = registered_nodes(victim.url)[victim.name]["incarnation"]
        victim.kill() if how == "kill" else victim.stop()
        target = damage(victim, pattern, kind)
        victim.start()
        found = await damage_reported(victim)
        await asyncio.to_thread(wait_healthy, [victim], 60)
        assert "Corruption" in found["reason"], found
        assert (Path(found["moved_to"]) / "rocksdb" / target.name).exists(), found  # kept, never deleted
        await repaired(victim)
        assert registered_nodes(victim.url)[victim.name]["incarnation"] not in ("", before)
        await asyncio.to_thread(
            wait_until,
            lambda: local_queues(victim.url)[QUEUE]["messages_ready"] == MESSAGES,
            30,
            "the new replica to hold every message",
        )
        got = await client.get(QUEUE, MESSAGES, ack="auto")
        assert sorted(d.body for d in got) == sorted(f"m{i}".encode() for i in range(MESSAGES))


async def test_damaged_store_acknowledges_nothing_until_rebound_and_quorum_status_says_so(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls, timeout=5.0) as client:
        await client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        await publish_all(client, "m")
        leader = cluster.node((await client.queue(QUEUE))["leader"])
        victim, down = [n for n in cluster.nodes if n is not leader]
        down.stop()
        victim.kill()
        damage(victim, "*.log", "bitflip")
        victim.start()
        await asyncio.to_thread(wait_until, lambda: repairing(victim) is True, 30, "the damage reported")
        async with Client([leader.url], timeout=3.0) as lonely:
            with pytest.raises(QuorumqError):  # the new incarnation counts for no commit
                await lonely.publish(QUEUE, ["never-confirmed"])
        down.start()
        marks = await marks_until_voter(client, victim.name)
        assert "repairing: new incarnation" in marks, marks
        await repaired(victim)
        got = await client.get(QUEUE, MESSAGES + 1, ack="auto")
        bodies = {d.body for d in got}
        assert {f"m{i}".encode() for i in range(MESSAGES)} <= bodies, bodies


async def marks_until_voter(client: Client, member: str) -> set[str]:
    """Poll the queue's members (what `quorum_status` prints) until `member` is a voter of its new
    incarnation; returns how its row marked it meanwhile (replaced, learner, repairing)."""
    marks: set[str] = set()

    async def settled() -> bool:
        rows = {r["node"]: r for r in (await client.members(QUEUE))["members"]}
        row = rows.get(member, {})
        if row.get("replaced"):
            marks.add(f"replaced: {row['replaced']}")
        if row.get("membership") == "learner":
            marks.add("learner")
        if (row.get("repairing") or {}).get("reason", "").startswith("new incarnation"):
            marks.add("repairing: new incarnation")
        voter = row.get("membership") == "voter" and not row.get("repairing") and not row.get("replaced")
        assert voter and marks, f"marks seen: {marks}"
        return True

    await eventually(settled, f"{member} to become a voter again", timeout=REPAIR_TIMEOUT_S, interval=0.05)
    return marks


UNREAD_KEYS = 2000


def flip_byte(path: Path, offset: int) -> None:
    """Flip one byte of a file in place, synced."""
    with path.open("r+b") as file:
        file.seek(offset)
        byte = file.read(1)[0]
        file.seek(offset)
        file.write(bytes([byte ^ 0x01]))
        file.flush()
        os.fsync(file.fileno())


def table_of_unread_keys(database: Path) -> Path:
    """Add a table file holding only keys recovery never reads to a stopped node's database (compacted
    first, so that one more table triggers no compaction at open); returns the new file."""
    db = RocksDatabase.open(database)
    db.rdict.compact_range(None, None)
    before = set(database.glob("*.sst"))
    batch = db.new_batch()
    for i in range(UNREAD_KEYS):
        batch.put(b"Nunread-%05d" % i, random.Random(i).randbytes(1000))
    db.write(batch, sync=True)
    db.rdict.flush(True)
    db.close()
    (added,) = set(database.glob("*.sst")) - before
    return added


async def test_damage_found_by_the_read_through_after_serving_stops_the_node_and_its_next_start_sets_it_aside(
    cluster: ProcessCluster,
) -> None:
    async with Client(cluster.urls) as client:
        await client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        await publish_all(client, "m")
        victim = cluster.node((await client.queue(QUEUE))["leader"])
        victim.stop()
        table = table_of_unread_keys(victim.data_dir / "rocksdb")
        # a data block in the middle: the table opens (a seek below its keys reads only its first block)
        flip_byte(table, table.stat().st_size // 2)
        log_start = victim.log_path.stat().st_size
        victim.start()
        found = await damage_reported(victim)
        assert victim.restarts == 1, victim.restarts  # the runtime path: exit 75, started again
        log = victim.log_path.read_text()[log_start:]
        served, stopped = log.find("serving HTTP"), log.find("exiting: the next start keeps it aside")
        assert -1 < served < stopped, log  # it served first: the database was not read through at open
        assert log.find("serving HTTP", stopped) > stopped, log  # and served again after the restart
        assert "Corruption" in found["reason"], found
        assert (Path(found["moved_to"]) / "rocksdb" / table.name).exists(), found  # kept, never deleted
        await repaired(victim)
        got = await client.get(QUEUE, MESSAGES, ack="auto")
        assert sorted(d.body for d in got) == sorted(f"m{i}".encode() for i in range(MESSAGES))
