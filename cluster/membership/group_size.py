"""Continuous membership reconciliation: queue leaders grow their groups towards a target size.

The target is the queue's `x-quorum-target-group-size` in force (declared, or its policy's
`target-group-size`: `cluster.queues.policies`), else the node's `target_group_size` (0: none).
Every `membership_interval_ms`, and `membership_trigger_delay_ms` after nodes join or are forgotten or
queues are declared, each leader adds one node that hosts no replica (on a host the group does not use
yet when there is one: `cluster.queues.placement.next_replica`), only when every current member is up; with
`membership_auto_remove` it first removes members the cluster has forgotten. A step that changed
something schedules the next one after the trigger delay, so groups grow one node at a time.
"""

from __future__ import annotations

import asyncio
import logging

from cluster.hosts import host_of
from cluster.membership.group_changes import GroupChanges
from cluster.membership.host import MembershipHost
from cluster.membership.queue_members import QueueMembers
from cluster.queues.placement import next_replica, replica_counts
from cluster.queues.policies import policy_in_force
from queue_state.arguments import ArgumentError

log = logging.getLogger(__name__)


class GroupSizeReconciler:
    """Runs the target-group-size step of every queue this node leads when it is due."""

    def __init__(
        self, node: MembershipHost, members: QueueMembers, changes: GroupChanges, meta_group: str
    ) -> None:
        self.node = node
        self.members = members
        self.changes = changes
        self._meta_group = meta_group
        self._due = asyncio.get_running_loop().time() + node.config.membership_interval_ms / 1000

    def trigger(self) -> None:
        """Reconcile soon (after the trigger delay) rather than at the next interval."""
        self._due = min(
            self._due, asyncio.get_running_loop().time() + self.node.config.membership_trigger_delay_ms / 1000
        )

    async def run_if_due(self) -> None:
        """One step for every led queue when the interval or a trigger says so."""
        if asyncio.get_running_loop().time() < self._due:
            return
        self._due = asyncio.get_running_loop().time() + self.node.config.membership_interval_ms / 1000
        changed = False
        for name in sorted(self.node.queues):
            try:
                changed |= await self.step(name)
            except Exception as exc:  # one queue's failure must not stop the others
                log.warning("queue %s: membership reconciliation failed: %s", name, exc)
        if changed:
            self.trigger()

    def target_size(self, name: str) -> int:
        """The queue's target group size (0 when it has none)."""
        try:
            arguments = self.node.directory.info(name).arguments
            _, _, in_force = policy_in_force(arguments, self.node.metadata.policy_set, name)
            wanted = in_force.target_group_size
        except ArgumentError:
            wanted = None
        return wanted or self.node.config.target_group_size

    def _can_host(self, node: str) -> bool:
        """Whether `node` runs, connected, as the database it registered, and not as another incarnation
        than the metadata group records for it: a wiped node holds no metadata until the metadata group
        replaced it (it registers its new database before that, relaying through a peer), so it would
        host nothing, and the step would wait a minute for it to catch up."""
        registered = self.node.metadata.nodes.get(node)
        if registered is None or not self.node.status.is_up(node):
            return False
        if self.changes.awaits_replacement(self._meta_group, node):
            return False
        return not registered.incarnation or self.changes.proved_incarnation(node) == registered.incarnation

    async def step(self, name: str) -> bool:
        """Remove one forgotten member (auto_remove) or add one node towards the target; True if changed."""
        door = self.node.queues.get(name)
        if door is None or not door.is_leader or self.changes.busy(door.group):
            return False
        conf = self.changes.settled_conf(door.group)
        if conf is None:
            return False
        in_group = (*conf.voters, *conf.learners)
        cluster = set(self.node.status.cluster_members())
        if self.node.config.membership_auto_remove:
            forgotten = [m for m in in_group if m not in cluster and m not in self.node.metadata.nodes]
            if forgotten:
                await self.members.delete(name, forgotten[0])
                return True
        target = self.target_size(name)
        if len(in_group) >= target or not self.changes.all_members_up(door.group):
            return False
        candidates = [n for n in cluster if n not in in_group and self._can_host(n)]
        if not candidates:
            return False
        replicas = replica_counts(self.node.metadata.queues.values())
        chosen = next_replica(candidates, in_group, replicas, lambda n: host_of(n, self.node.metadata.nodes))
        log.info("queue %s: growing towards %d replicas onto %s", name, target, chosen)
        await self.members.add(name, chosen)
        return True
