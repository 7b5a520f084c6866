"""The node's membership services: queue replica sets, cluster join/forget, and their periodic upkeep."""

from __future__ import annotations

import asyncio
import logging
import zlib

from cluster.membership.cluster_members import ClusterMembers
from cluster.membership.group_changes import GroupChanges
from cluster.membership.group_size import GroupSizeReconciler
from cluster.membership.host import MembershipHost
from cluster.membership.queue_members import QueueMembers
from cluster.metadata.metadata_door import MetadataDoor

log = logging.getLogger(__name__)

UPKEEP_EVERY_S = 0.5
UPKEEP_YIELD_EVERY = 100
"""Upkeep lets the loop run other work after this many queues: a pass over thousands of queues would
otherwise hold it for as long as peers take to deem this node silent."""
QUIET_UPKEEP_EVERY_PASSES = 20
"""A queue whose group is quiet (idle, every member holding all it commits) has its members healed one
pass in this many (a twentieth of them each pass, by a hash of the name, so no pass heals them all):
what a heal answers (a new incarnation, a change to finish) wakes the group first, save for the
metadata's list of members, which a group can go quiet before aligning."""


class Membership:
    """Everything a node does about membership; `run()` is its periodic upkeep."""

    def __init__(
        self, node: MembershipHost, door: MetadataDoor, changes: GroupChanges, meta_group: str
    ) -> None:
        self.node = node
        self.changes = changes
        self.queues = QueueMembers(node, door, changes)
        self.cluster = ClusterMembers(node, door, changes, meta_group)
        self.group_size = GroupSizeReconciler(node, self.queues, changes, meta_group)
        self._known_nodes: frozenset[str] = frozenset()
        self._known_queues: frozenset[str] = frozenset()
        self._known_policies_revision = 0
        self._known_voters: frozenset[str] = frozenset()
        self._known_led: frozenset[str] = frozenset()

    def metadata_changed(self) -> None:
        """Nodes joined or were forgotten, queues appeared, or policies changed (a target group size
        among them): reconcile group sizes soon."""
        metadata = self.node.metadata
        nodes, queues = frozenset(metadata.nodes), frozenset(metadata.queues)
        revision = metadata.policies_revision
        policies_changed = revision != self._known_policies_revision
        if nodes != self._known_nodes or not queues <= self._known_queues or policies_changed:
            self.group_size.trigger()
        self._known_policies_revision = revision
        for gone in self._known_nodes - nodes:
            self.node.transport.remove_peer(gone)
        self._known_nodes, self._known_queues = nodes, queues

    def _watch_changes(self) -> None:
        """Reconcile soon when a joined node was promoted, a node forgotten, or this node took over
        queues (their previous leader may have stopped before reconciling)."""
        voters = frozenset(self.node.status.cluster_members())
        led = frozenset(self.node.led_queues)
        if voters != self._known_voters or not led <= self._known_led:
            self.group_size.trigger()
        self._known_voters, self._known_led = voters, led

    async def run(self) -> None:
        """Bind or replace incarnations, promote caught-up learners, heal interrupted changes; and, in a
        task of its own (a step may wait a minute for a new member to catch up, which must not hold the
        rest up: the metadata group's healing least of all), grow groups towards their target."""
        sizing = asyncio.create_task(self._grow_groups())
        try:
            await self._heal_groups()
        finally:
            sizing.cancel()

    async def _grow_groups(self) -> None:
        while True:
            await asyncio.sleep(UPKEEP_EVERY_S)
            try:
                await self.group_size.run_if_due()
            except Exception as exc:  # the next round tries again
                log.info("membership upkeep: %s", exc)

    async def _heal_groups(self) -> None:
        passes = 0
        while True:
            await asyncio.sleep(UPKEEP_EVERY_S)
            self._watch_changes()
            passes += 1
            share = passes % QUIET_UPKEEP_EVERY_PASSES
            try:
                await self.cluster.heal()
                for position, name in enumerate(sorted(self.node.led_queues)):  # heal acts on led queues
                    queue = self.node.led_queues.get(name)
                    in_share = zlib.crc32(name.encode()) % QUIET_UPKEEP_EVERY_PASSES == share
                    if queue is not None and (in_share or not queue.quiet):
                        await self.queues.heal(name)
                    if position % UPKEEP_YIELD_EVERY == UPKEEP_YIELD_EVERY - 1:
                        await asyncio.sleep(0)  # a heal that changes nothing never yields: let others run
            except Exception as exc:  # upkeep retries next round; a request may have raced it
                log.info("membership upkeep: %s", exc)
