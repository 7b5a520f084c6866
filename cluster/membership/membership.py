"""The node's membership services: queue replica sets, cluster join/forget, and their periodic upkeep."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from cluster.cluster_members import ClusterMembers
from cluster.group_changes import GroupChanges
from cluster.group_size import GroupSizeReconciler
from cluster.queue_members import QueueMembers

if TYPE_CHECKING:
    from cluster.node import Node

log = logging.getLogger(__name__)

UPKEEP_EVERY_S = 0.5


class Membership:
    """Everything a node does about membership; `run()` is its periodic upkeep."""

    def __init__(self, node: Node, meta_group: str) -> None:
        assert node.host is not None
        self.node = node
        self.changes = GroupChanges(node.host, node.is_up)
        self.queues = QueueMembers(node, self.changes)
        self.cluster = ClusterMembers(node, self.changes, meta_group)
        self.group_size = GroupSizeReconciler(node, self.queues, self.changes)
        self._known_nodes: frozenset[str] = frozenset()
        self._known_queues: frozenset[str] = frozenset()
        self._known_voters: frozenset[str] = frozenset()
        self._known_led: frozenset[str] = frozenset()

    def metadata_changed(self) -> None:
        """Nodes joined or were forgotten, or queues appeared: reconcile group sizes soon."""
        state = self.node.meta.state
        nodes, queues = frozenset(state.nodes), frozenset(state.queues)
        if nodes != self._known_nodes or not queues <= self._known_queues:
            self.group_size.trigger()
        for gone in self._known_nodes - nodes:
            self.node.transport.remove_peer(gone)
        self._known_nodes, self._known_queues = nodes, queues

    def _watch_changes(self) -> None:
        """Reconcile soon when a joined node was promoted, a node forgotten, or this node took over
        queues (their previous leader may have stopped before reconciling)."""
        voters = frozenset(self.node.cluster_members())
        led = frozenset(name for name, service in self.node.queues.items() if service.is_leader)
        if voters != self._known_voters or not led <= self._known_led:
            self.group_size.trigger()
        self._known_voters, self._known_led = voters, led

    async def run(self) -> None:
        """Bind or replace incarnations, promote caught-up learners, heal interrupted changes, grow groups
        towards their target."""
        while True:
            await asyncio.sleep(UPKEEP_EVERY_S)
            self._watch_changes()
            try:
                await self.cluster.heal()
                for name in sorted(self.node.queues):
                    await self.queues.heal(name)
                await self.group_size.run_if_due()
            except Exception as exc:  # upkeep retries next round; a request may have raced it
                log.info("membership upkeep: %s", exc)
