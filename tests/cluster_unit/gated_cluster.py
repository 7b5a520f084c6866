"""Three RaftHosts over real transports and RocksDB stores whose writes can be held back with a gate.

A closed gate holds a node's writes in the fsync worker thread while its loop runs on, so a test can
order events without depending on timing (e.g. followers acknowledge while the leader's write waits).
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from support.eventually import eventually

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.metadata.metadata_app import MetadataApp
from cluster.replication.raft_host import GroupApp, RaftHost
from cluster.replication.transport import Transport
from metadata_state.codec import encode
from metadata_state.commands import DeleteUser
from raft_log.storage.database import Database
from raft_log.storage.node_store import GroupLog, NodeStore, TakenBatch
from raft_log.types import ConfState

NAMES = ("a", "b", "c")
GROUP = "g"


def a_command(size: int = 0) -> list:
    """A metadata command of about `size` bytes that changes nothing (it deletes a user nobody has: the
    machine answers NotFound), for a test that needs entries whatever they do."""
    return encode(DeleteUser("x" * size or "nobody"))


class GatedStore(NodeStore):
    """A real node store whose writes wait while the gate is closed (open from the start: recovery writes)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.gate = threading.Event()
        self.gate.set()

    def write_taken(self, taken: TakenBatch, sync: bool) -> None:
        assert self.gate.wait(30), "the gate was never opened"
        super().write_taken(taken, sync)


class Node:
    def __init__(self, name: str, store: GatedStore, transport: Transport, host: RaftHost, app: Any):
        self.name, self.store, self.transport, self.host, self.app = name, store, transport, host, app


def metadata_app(name: str, group_log: GroupLog) -> GroupApp:
    """The application GROUP replicates unless a test says otherwise: a metadata machine."""
    return MetadataApp(lambda: None)


def restarted_host(
    name: str, store: NodeStore, transport: Transport, *, tick_ms: int, election_ticks: int
) -> RaftHost:
    """A host as a restarted node runs one (batches written at once, a snapshot every 1000 entries)."""
    return RaftHost(
        name,
        store,
        transport,
        tick_ms=tick_ms,
        election_ticks=election_ticks,
        heartbeat_ticks=2,
        snapshot_every=1000,
        batch_delay_ms=0,
        rng=random.Random(name),
    )


def solo_host(
    store: NodeStore, transport: Transport, *, snapshot_every_bytes: int, **settings: int
) -> RaftHost:
    """The host of node "solo", the only voter of its groups (fast ticks; `settings` are further RaftHost
    keyword arguments, such as `apply_bytes_per_round`)."""
    return RaftHost(
        "solo",
        store,
        transport,
        tick_ms=20,
        election_ticks=10,
        heartbeat_ticks=2,
        snapshot_every=1000,
        snapshot_every_bytes=snapshot_every_bytes,
        batch_delay_ms=0,
        rng=random.Random(1),
        **settings,
    )


class Running:
    """One restarted node hosting GROUP (a metadata machine) over a real transport: its store, transport
    and host."""

    def __init__(self, name: str, path: Path, listen: Address, bootstrap: ConfState | None) -> None:
        self.name = name
        self.store = NodeStore.open(path)
        holder: list[RaftHost] = []
        self.transport = Transport(
            name, listen, "secret", lambda *f, h=holder: h[0].on_frame(*f), incarnation=self.store.incarnation
        )
        self.host = restarted_host(name, self.store, self.transport, tick_ms=20, election_ticks=10)
        holder.append(self.host)
        self.bootstrap = bootstrap

    async def start(self, peers: dict[str, Address]) -> None:
        for peer, address in peers.items():
            if peer != self.name:
                self.transport.set_peer(peer, address)
        await self.transport.start()
        self.host.open_group(GROUP, MetadataApp(lambda: None), self.bootstrap)
        self.host.start()

    async def stop(self) -> None:
        await self.host.stop()
        await self.transport.stop()
        self.store.close()

    @property
    def raft(self):  # type: ignore[no-untyped-def]
        return self.host.groups[GROUP].raft


def local_addresses(names: tuple[str, ...]) -> dict[str, Address]:
    """A free local port for each of `names`."""
    return {
        name: Address("127.0.0.1", port) for name, port in zip(names, free_ports(len(names)), strict=True)
    }


async def start_led_by(nodes: dict[str, Running], addresses: dict[str, Address], leader: str) -> Running:
    """Start every node, make `leader` campaign, and return it once it leads GROUP and committed."""
    for node in nodes.values():
        await node.start(addresses)
    led = nodes[leader]
    led.host.campaign(GROUP)
    await eventually(lambda: led.raft.is_leader and led.raft.status().commit >= 1, f"{leader} to lead")
    return led


@contextlib.asynccontextmanager
async def gated_cluster(
    tmp_path: Path,
    new_app: Callable[[str, GroupLog], GroupApp] = metadata_app,
    *,
    election_ticks: int = 200,  # 10 s: no election while a write is held back
) -> AsyncIterator[dict[str, Node]]:
    """Nodes a, b, c hosting GROUP (the application `new_app` makes of a node's name and group log: a
    metadata machine unless told), every gate open, no election yet."""
    ports = free_ports(len(NAMES))
    result: dict[str, Node] = {}
    for name, port in zip(NAMES, ports, strict=True):
        store = GatedStore.open(tmp_path / name)
        group_log = store.create_group(GROUP, ConfState(voters=NAMES))
        store.commit(sync=True)
        holder: list[RaftHost] = []  # the transport is made before the host it hands frames to
        transport = Transport(
            name,
            Address("127.0.0.1", port),
            "secret",
            lambda *f, h=holder: h[0].on_frame(*f),
            on_link_lost=lambda peer, h=holder: h[0].link_lost(peer),  # as a Node wires it
        )
        host = RaftHost(
            name,
            store,
            transport,
            tick_ms=50,
            election_ticks=election_ticks,
            heartbeat_ticks=2,
            snapshot_every=1000,
            batch_delay_ms=0,
            rng=random.Random(name),
            inline_fsync_max_ms=0,  # every synced write in the worker thread, where the gate holds it
        )
        holder.append(host)
        result[name] = Node(name, store, transport, host, new_app(name, group_log))
    for node in result.values():
        for peer in result.values():
            if peer is not node:
                node.transport.set_peer(peer.name, peer.transport.listen)
        await node.transport.start()
        node.host.open_group(GROUP, node.app)
        node.host.start()
    try:
        yield result
    finally:
        for node in result.values():
            node.store.gate.set()
            await node.host.stop()
            await node.transport.stop()
            node.store.close()
