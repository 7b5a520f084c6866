"""Every proposal gets an answer (issue 37, finding 7): its result once applied, or ProposalFailed (a 503;
`outcome_unknown` when it may still commit) once this node can no longer see it applied.

A leader cut off from the others keeps its entries in flight when it learns of a newer term: the new
leader's appends usually settle them (applied with their results, or failed as overwritten). They do
not when a snapshot covers their index (no entry is applied there) or when the new leader's log
replaces them and never grows as far (an idle queue): those callers were never answered.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from stepped_cluster import GROUP, SteppedCluster, publish_op

from cluster.replication.proposals import ProposalFailed

OTHERS = ("b", "c")


@pytest.fixture
def cluster(tmp_path: Path) -> SteppedCluster:
    cluster = SteppedCluster(tmp_path, snapshot_every=4)
    cluster.elect("a")
    return cluster


def _propose_cut_off(cluster: SteppedCluster, count: int) -> list[asyncio.Future]:
    """Leader a, cut off from b and c, proposes `count` entries that only it holds."""
    futures = []
    for i in range(count):
        futures.append(cluster.hosts["a"].submit(GROUP, publish_op(f"cut off {i}".encode())))
        cluster.settle(among=("a",))
    assert not any(future.done() for future in futures)
    return futures


def _new_leader(cluster: SteppedCluster) -> str:
    """b and c elect one of them (a's clock stands still: it never steps down on its own)."""
    cluster.until(lambda: any(cluster.group(n).raft.is_leader for n in OTHERS), among=OTHERS)
    return next(n for n in OTHERS if cluster.group(n).raft.is_leader)


def _outcome(future: asyncio.Future) -> str:
    if not future.done():
        return "unanswered"
    failure = future.exception()
    if failure is None:
        return "applied"
    assert isinstance(failure, ProposalFailed)
    return "outcome unknown" if failure.outcome_unknown else "failed"


async def test_rule_a_deposed_leaders_proposals_are_answered_when_a_snapshot_covers_them(
    cluster: SteppedCluster,
) -> None:
    try:
        [future] = _propose_cut_off(cluster, 1)
        proposed_at = cluster.group("a").raft.status().last_index
        leader = _new_leader(cluster)
        for i in range(20):
            cluster.hosts[leader].submit(GROUP, publish_op(f"after {i}".encode()))
            cluster.settle(among=OTHERS)
        assert cluster.group(leader).raft.status().first_index > proposed_at + 1  # compacted past it

        cluster.until(lambda: cluster.group("a").applied == cluster.group(leader).applied)
        assert cluster.group("a").snapshot_index > proposed_at  # a caught up through a snapshot
        assert _outcome(future) == "outcome unknown"
    finally:
        cluster.close()


async def test_rule_a_deposed_leaders_proposals_are_answered_when_a_shorter_log_replaces_them(
    cluster: SteppedCluster,
) -> None:
    try:
        futures = _propose_cut_off(cluster, 3)
        leader = _new_leader(cluster)  # its no-op takes the index of a's first entry; the queue stays idle

        cluster.until(lambda: cluster.group("a").applied == cluster.group(leader).applied)
        assert cluster.group("a").raft.leader == leader
        assert [_outcome(f) for f in futures] == ["failed", "outcome unknown", "outcome unknown"]
    finally:
        cluster.close()
