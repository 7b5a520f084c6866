"""RaftHost rounds over real transports and RocksDB stores: what may leave a node before its fsync.

The leader's own write is held back with a gate (in the fsync worker thread, so the loop runs on),
so the order of events does not depend on timing:
its appends reach the followers and are acknowledged, the commit index moves, yet the proposal is not
confirmed (nor applied) until the leader's write is done.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.metadata_app import MetadataApp
from cluster.raft_host import RaftHost
from cluster.transport import Transport
from raft_log.storage import NodeStore, TakenBatch
from raft_log.types import ConfState

NAMES = ("a", "b", "c")
GROUP = "g"


class GatedStore(NodeStore):
    """A real node store whose writes wait while the gate is closed."""

    gate: threading.Event

    def write_taken(self, taken: TakenBatch, sync: bool) -> None:
        assert self.gate.wait(30), "the gate was never opened"
        super().write_taken(taken, sync)


class Node:
    def __init__(self, name: str, store: GatedStore, transport: Transport, host: RaftHost, app: MetadataApp):
        self.name, self.store, self.transport, self.host, self.app = name, store, transport, host, app
        self.applied: list[int] = []


async def eventually(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Wait (yielding to the loop) until `condition` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[dict[str, Node]]:
    ports = free_ports(len(NAMES))
    result: dict[str, Node] = {}
    for name, port in zip(NAMES, ports, strict=True):
        store = GatedStore.open(tmp_path / name)
        store.gate = threading.Event()
        store.gate.set()
        holder: list[RaftHost] = []  # the transport is made before the host it hands frames to
        transport = Transport(
            name, Address("127.0.0.1", port), "secret", lambda *f, h=holder: h[0].on_frame(*f)
        )
        host = RaftHost(
            name,
            store,
            transport,
            tick_ms=50,
            election_ticks=200,  # 10 s: no election while a write is held back
            heartbeat_ticks=2,
            snapshot_every=1000,
            batch_delay_ms=0,
            rng=random.Random(name),
            inline_fsync_max_ms=0,  # every synced write in the worker thread, where the gate holds it
        )
        holder.append(host)
        result[name] = Node(name, store, transport, host, MetadataApp(lambda: None))
    for node in result.values():
        for peer in result.values():
            if peer is not node:
                node.transport.set_peer(peer.name, peer.transport.listen)
        await node.transport.start()
        node.host.open_group(GROUP, node.app, ConfState(voters=NAMES))
        node.host.start()
    try:
        yield result
    finally:
        for node in result.values():
            node.store.gate.set()
            await node.host.stop()
            await node.transport.stop()
            node.store.close()


async def test_a_leader_sends_appends_before_its_fsync_but_confirms_only_after_it(
    nodes: dict[str, Node],
) -> None:
    leader = nodes["a"]
    leader.host.campaign(GROUP)
    raft = leader.host.groups[GROUP].raft
    await eventually(lambda: raft.is_leader and raft.status().commit >= 1, "a to lead and commit its no-op")
    committed_before = raft.status().commit

    leader.store.gate.clear()
    confirmed = leader.host.submit(GROUP, ["no-such-command"])
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
    assert result[0] == "error"  # the metadata machine's answer to an unknown command
    assert leader.host.groups[GROUP].applied >= index


async def test_a_follower_acknowledges_only_after_its_own_fsync(nodes: dict[str, Node]) -> None:
    leader = nodes["a"]
    leader.host.campaign(GROUP)
    raft = leader.host.groups[GROUP].raft
    await eventually(lambda: raft.is_leader and raft.status().commit >= 1, "a to lead and commit its no-op")
    for follower in ("b", "c"):
        nodes[follower].store.gate.clear()
    index = raft.status().commit + 1
    confirmed = leader.host.submit(GROUP, ["no-such-command"])
    await eventually(lambda: nodes["b"].host.groups[GROUP].log.last_index() >= index, "b to stage the entry")
    await eventually(lambda: nodes["c"].host.groups[GROUP].log.last_index() >= index, "c to stage the entry")
    assert all(raft.status().progress[f].match < index for f in ("b", "c"))
    assert raft.status().commit < index and not confirmed.done()
    nodes["b"].store.gate.set()
    await asyncio.wait_for(confirmed, 20)
    assert raft.status().progress["b"].match >= index
