"""A seed node whose whole data directory is wiped is replaced in the metadata group (finding 7 of issue
17), on real processes.

The metadata group bootstraps from the seeds with unknown incarnations; its leader records them once all
three connected. A wiped seed restarts without its `node.json`, bootstraps the metadata group from its
seeds again as a voter with an empty log: the others drop its messages, and the leader replaces it (remove
the old replica, add the new one as a learner) and promotes it again once it caught up.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from membership_helpers import FAST_RECONCILE, local_queues, registered_nodes

from api.client import QuorumqClient
from cli.node_processes import ProcessCluster, wait_healthy, wait_until

QUEUE = "before-the-wipe"


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


async def test_finding7_a_wiped_seed_is_replaced_in_the_metadata_group_and_promoted_again(
    cluster: ProcessCluster,
) -> None:
    names = [n.name for n in cluster.nodes]
    async with QuorumqClient(cluster.urls) as client:
        meta_leader = cluster.node((await client.health())["metadata_leader"])

        def bound() -> bool:
            return meta_leader.log_path.read_text().count("is recorded") >= len(names)

        await asyncio.to_thread(wait_until, bound, 30, "the seeds' incarnations to be recorded")
        await client.declare(QUEUE, {"x-quorum-initial-group-size": 1})
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
        assert QUEUE in local_queues(wiped.url)  # its metadata replica caught up with the cluster
