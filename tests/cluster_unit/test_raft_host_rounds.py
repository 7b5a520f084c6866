"""RaftHost rounds over real transports and RocksDB stores: what may leave a node before its fsync.

The leader's own write is held back with a gate (in the fsync worker thread, so the loop runs on),
so the order of events does not depend on timing:
its appends reach the followers and are acknowledged, the commit index moves, yet the proposal is not
confirmed (nor applied) until the leader's write is done.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from gated_cluster import GROUP, Node, a_command, solo_host
from support.eventually import eventually

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.metadata.metadata_app import MetadataApp
from cluster.replication.transport import Transport
from metadata_state.replies import NotFound
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState


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
    """Rule 1 of docs/internals/raft.md for votes: a reply that grants a vote promises the vote is on disk."""
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


async def test_rule_a_round_stopped_while_its_write_waits_for_the_fsync_thread_still_writes_it(
    tmp_path: Path,
) -> None:
    """The store writes batches in the order it handed them out and closes once all are written: a stop
    that cancelled a round's write still queued for the fsync thread left it unwritten, and `Node.stop`
    waited for it for ever."""
    store = NodeStore.open(tmp_path / "rocksdb")
    transport = Transport("solo", Address("127.0.0.1", free_ports(1)[0]), "secret", lambda *_: None)
    # every synced write goes to the fsync thread
    host = solo_host(store, transport, snapshot_every_bytes=1 << 40, inline_fsync_max_ms=0)
    host.open_group(GROUP, MetadataApp(lambda: None), ConfState(voters=("solo",)))
    host.start()
    group = host.groups[GROUP]
    host.campaign(GROUP)
    await eventually(lambda: group.raft.is_leader and group.applied >= 1, "solo to lead")
    busy = threading.Event()
    host._disk.submit(busy.wait)  # the fsync thread is busy: the next write waits in its queue
    host.submit(GROUP, a_command())
    await eventually(lambda: host._round_open, "a round to wait for its write")
    processing = host._tasks[1]
    processing.cancel()
    await asyncio.wait([processing])
    busy.set()
    await host.stop()
    closing = threading.Thread(target=store.close, daemon=True)
    closing.start()
    closing.join(10)
    assert not closing.is_alive(), "the store still waits for a batch the stopped round took"
