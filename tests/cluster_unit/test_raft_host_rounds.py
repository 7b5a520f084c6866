"""RaftHost rounds over real transports and RocksDB stores: what may leave a node before its fsync.

The leader's own write is held back with a gate (in the fsync worker thread, so the loop runs on),
so the order of events does not depend on timing:
its appends reach the followers and are acknowledged, the commit index moves, yet the proposal is not
confirmed (nor applied) until the leader's write is done.
"""

from __future__ import annotations

import asyncio

from gated_cluster import GROUP, Node, a_command, eventually

from cluster.metadata.replies import NotFound


async def test_a_leader_sends_appends_before_its_fsync_but_confirms_only_after_it(
    nodes: dict[str, Node],
) -> None:
    leader = nodes["a"]
    leader.host.campaign(GROUP)
    raft = leader.host.groups[GROUP].raft
    await eventually(lambda: raft.is_leader and raft.status().commit >= 1, "a to lead and commit its no-op")
    committed_before = raft.status().commit

    leader.store.gate.clear()
    confirmed = leader.host.submit(GROUP, a_command())
    index = committed_before + 1

    def followers_persisted() -> bool:
        progress = raft.status().progress
        return all(f in progress and progress[f].match >= index for f in ("b", "c"))

    await eventually(followers_persisted, "both followers to persist the entry")
    await eventually(lambda: raft.status().commit >= index, "the leader to learn the entry is committed")
    assert not confirmed.done()  # committed by the followers, not yet durable on the leader
    assert leader.host.groups[GROUP].applied < index

    leader.store.gate.set()
    result = await asyncio.wait_for(confirmed, 20)
    assert isinstance(result, NotFound)  # the metadata machine's answer to deleting no user
    assert leader.host.groups[GROUP].applied >= index


async def test_a_follower_acknowledges_only_after_its_own_fsync(nodes: dict[str, Node]) -> None:
    leader = nodes["a"]
    leader.host.campaign(GROUP)
    raft = leader.host.groups[GROUP].raft
    await eventually(lambda: raft.is_leader and raft.status().commit >= 1, "a to lead and commit its no-op")
    for follower in ("b", "c"):
        nodes[follower].store.gate.clear()
    index = raft.status().commit + 1
    confirmed = leader.host.submit(GROUP, a_command())
    await eventually(lambda: nodes["b"].host.groups[GROUP].log.last_index() >= index, "b to stage the entry")
    await eventually(lambda: nodes["c"].host.groups[GROUP].log.last_index() >= index, "c to stage the entry")
    assert all(raft.status().progress[f].match < index for f in ("b", "c"))
    assert raft.status().commit < index and not confirmed.done()
    nodes["b"].store.gate.set()
    await asyncio.wait_for(confirmed, 20)
    assert raft.status().progress["b"].match >= index


async def test_a_vote_leaves_only_once_it_is_written(nodes: dict[str, Node]) -> None:
    """Rule 1 of docs/raft.md for votes: a reply that grants a vote promises the vote is on disk."""
    candidate = nodes["a"]
    for voter in ("b", "c"):
        nodes[voter].store.gate.clear()
    candidate.host.campaign(GROUP)

    def voted_for_a(name: str) -> bool:
        return nodes[name].host.groups[GROUP].log.initial_state()[0].vote == "a"

    await eventually(lambda: voted_for_a("b") and voted_for_a("c"), "b and c to stage their votes for a")
    assert not candidate.host.groups[GROUP].raft.is_leader, "a vote was counted before it was written"
    nodes["b"].store.gate.set()
    await eventually(lambda: candidate.host.groups[GROUP].raft.is_leader, "a to win once b's vote is written")
    nodes["c"].store.gate.set()
