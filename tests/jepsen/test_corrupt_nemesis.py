"""The `corrupt` nemesis bites: it really damages one file of the stopped node, the node reports the
damage in its health when it starts again (found at open, or by the read-through after it and a
restart), comes back to quorum, and nothing confirmed is lost."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from netns_cluster import QUEUE

from cli.node_processes import NodeProcess, wait_healthy, wait_until
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.corrupt_nemesis import DATABASE_DIR, CorruptNemesis
from jepsen_tests.file_damage import KINDS, damageable_files
from quorumq import QuorumqError, SyncClient

pytestmark = pytest.mark.faults

SEED = 4  # draws `bitflip`, which every live RocksDB file detects
MESSAGES = 30


def file_bytes(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in damageable_files(directory)}


def reported_damage(node: NodeProcess) -> dict[str, Any] | None:
    """The damage the node reports; None when it reports none or cannot be asked (restarting)."""
    try:
        with SyncClient([node.url], timeout=5.0, connect_timeout=1.0) as client:
            return client.health()["damage"]
    except QuorumqError:
        return None


def test_corrupt_damages_one_file_of_the_stopped_node_which_reports_it_and_loses_nothing(
    healed: JepsenCluster,
) -> None:
    cluster = healed
    assert random.Random(SEED).choice(KINDS) == "bitflip"
    with SyncClient(cluster.urls, timeout=30.0) as client:
        for i in range(MESSAGES):
            client.publish(QUEUE, [f"c{i}"])
    # A node that is down may still be repairing: the nemesis then damages it again, never a second node.
    down = cluster.names[1]
    cluster.kill(down)
    database = cluster.node(down).data_dir / DATABASE_DIR
    before = file_bytes(database)

    fault = CorruptNemesis().inject(cluster, [QUEUE], random.Random(SEED))

    assert fault.nodes == [down] and fault.kind == "bitflip", fault
    named = re.match(r"bitflip rocksdb/(\S+) at (\d+) \(\+(\d+) bytes\)", fault.description)
    assert named, fault.description
    after = file_bytes(database)
    changed = [name for name in before if after.get(name) != before[name]]
    assert changed == [named[1]], (changed, fault.description)
    span = slice(int(named[2]), int(named[2]) + int(named[3]))
    assert after[named[1]][span] != before[named[1]][span]

    fault.heal()
    node = cluster.node(down)
    # found at open, or by the read-through once the node serves (decision 0016: exit 75, started again)
    wait_until(lambda: reported_damage(node) is not None, 60, "the damage to be reported", [node])
    wait_healthy([node], 60)
    damage = reported_damage(node)
    assert damage and "Corruption" in damage["reason"], damage
    assert (Path(damage["moved_to"]) / DATABASE_DIR / named[1]).exists(), damage

    def rebound() -> bool:
        with SyncClient([node.url], timeout=5.0) as client:
            return client.health()["damage"]["repairing"] is False

    wait_until(rebound, 60, "the damaged node to be rebound in every group", [node])
    cluster.wait_for_quorum([QUEUE])
    with SyncClient(cluster.urls, timeout=30.0) as client:
        got = {d.body for d in client.get(QUEUE, count=MESSAGES + 10, ack="auto")}
    assert {f"c{i}".encode() for i in range(MESSAGES)} <= got
