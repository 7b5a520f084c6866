"""Real nodes (RocksDB, TCP, Raft) run in the test's process, so a test can stop and restart them, and
reach into them, between any two steps."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from support.eventually import eventually

from cli.node_processes import HARNESS_SECRET, free_ports
from cluster.config import Address, NodeConfig, Seed
from cluster.node import META_GROUP, Node

TICK_MS = 50


class InProcessCluster:
    """Nodes seeded with each other, each on its own data directory under `root`; `nodes` holds those
    running. `settings` override `NodeConfig` fields of every node."""

    def __init__(self, root: Path, names: Sequence[str], **settings: Any) -> None:
        ports = free_ports(2 * len(names))
        raft = {name: Address("127.0.0.1", ports[2 * i]) for i, name in enumerate(names)}
        seeds = tuple(Seed(name, address) for name, address in raft.items())
        self.configs = {
            name: NodeConfig(
                name,
                root / name,
                Address("127.0.0.1", ports[2 * i + 1]),
                raft[name],
                seeds=seeds,
                cluster_secret=HARNESS_SECRET,
                **({"tick_ms": TICK_MS} | settings),
            )
            for i, name in enumerate(names)
        }
        self.nodes: dict[str, Node] = {}

    async def start(self, name: str) -> Node:
        """Start node `name` (again) on its data directory."""
        node = Node(self.configs[name])
        await node.start()
        self.nodes[name] = node
        return node

    async def stop(self, name: str) -> None:
        """Stop node `name` cleanly."""
        await self.nodes.pop(name).stop()

    async def start_all(self) -> dict[str, Node]:
        """Start every node and wait until each registered in the metadata."""
        for name in self.configs:
            await self.start(name)
        await eventually(
            lambda: all(len(n.metadata.nodes) == len(self.configs) for n in self.nodes.values()),
            "registrations",
        )
        return self.nodes

    async def stop_all(self) -> None:
        for name in list(self.nodes):
            await self.stop(name)


def metadata_leader(nodes: dict[str, Node]) -> Node:
    """The running node that leads the metadata group, as the first running node knows it."""
    leader = next(iter(nodes.values())).status.meta_leader()
    assert leader is not None
    return nodes[leader]


def raft_group(node: Node, gid: str) -> Any:
    """The node's hosted Raft group `gid` (KeyError when it hosts none)."""
    assert node.host is not None
    return node.host.groups[gid]


def settled_leader(nodes: dict[str, Node], gid: str) -> Node | None:
    """The node leading group `gid` once it committed an entry of its term, else None."""
    for node in nodes.values():
        group = node.host.groups.get(gid) if node.host is not None else None
        if group is not None and group.raft.is_leader and node.membership.changes.settled_conf(gid):
            return node
    return None


async def metadata_applied(meta: Node, x: Node) -> None:
    """Wait until `x` applied the metadata up to what `meta` applied, and reconciled with it."""
    applied = raft_group(meta, META_GROUP).applied

    def caught_up() -> bool:
        return raft_group(x, META_GROUP).applied >= applied and not x._reconcile_scheduled

    await eventually(caught_up, f"{x.name} to apply the metadata up to {applied}")
