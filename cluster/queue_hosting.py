"""The queue groups a node hosts, kept in step with the metadata.

A queue listing this node gets its group opened: from the node's database when it was there before;
else bootstrapped with the queue's initial members when this node is one of them (the placed leader
campaigns at once, the others hold their elections a while), and empty, waiting for the leader to add
it, when it is a member added later or its database is not the one the queue was declared with. A
queue that no longer lists this node, or was deleted (or declared again as another group), has its
group closed and its log dropped.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from cluster.metadata.commands import SetArguments
from cluster.metadata.records import PolicyRecord, QueueInfo
from cluster.policies import applied_policy
from cluster.queue_leader import QueueLeader
from cluster.queue_replica import QueueReplica
from queue_state.arguments import parse_arguments
from raft_log.storage import GroupLog, NodeStore
from raft_log.types import ConfState

log = logging.getLogger(__name__)

NewLeader = Callable[[QueueInfo, QueueReplica], QueueLeader]


class QueueGroups(Protocol):
    """Where queue groups run (`RaftHost`)."""

    def open_group(self, gid: str, app: QueueReplica) -> object: ...

    def close_group(self, gid: str, *, drop: bool) -> None: ...

    def campaign(self, gid: str) -> None: ...

    def hold_elections(self, gid: str, ticks: int) -> None: ...


class QueueHosting:
    """The queues whose groups this node hosts, each with its door (`QueueLeader`, built by
    `new_leader`). `hold_ticks` is how long the initial members other than the placed leader hold their
    elections in a new group."""

    def __init__(
        self, name: str, store: NodeStore, groups: QueueGroups, new_leader: NewLeader, hold_ticks: int
    ) -> None:
        self._name = name
        self._store = store
        self._groups = groups
        self._new_leader = new_leader
        self._hold_ticks = hold_ticks
        self._queues: dict[str, QueueLeader] = {}

    @property
    def queues(self) -> Mapping[str, QueueLeader]:
        """The door of every queue hosted here, by queue name (leading or following)."""
        return self._queues

    def reconcile(self, wanted: Iterable[QueueInfo]) -> None:
        """Host exactly the queues `wanted` (those the metadata lists this node in)."""
        by_group = {info.group: info for info in wanted}
        for name, queue in list(self._queues.items()):
            if queue.group not in by_group:
                del self._queues[name]
                self._groups.close_group(queue.group, drop=True)
        for info in by_group.values():
            if info.name not in self._queues:
                self._host(info)

    def on_timer(self) -> None:
        """Run the leader timers of every hosted queue (TTL, leases, queue expiry, consumer timeouts)."""
        for queue in list(self._queues.values()):
            queue.on_timer()

    def apply_policies(self, policies: Iterable[PolicyRecord], revision: int) -> None:
        """Have each queue this node leads apply the policy the metadata's `policies`, at `revision`,
        choose for it (a queue that applies that revision already costs a comparison)."""
        chosen = list(policies)
        for name, queue in list(self._queues.items()):
            queue.apply_policy(revision, functools.partial(applied_policy, chosen, name))

    def changed_arguments(self, declared: Mapping[str, QueueInfo]) -> list[SetArguments]:
        """The commands recording the arguments of queues this node leads that were changed at runtime
        and differ from those `declared` in the metadata."""
        changed = []
        for name, queue in list(self._queues.items()):
            info = declared.get(name)
            current = queue.definition()
            if queue.is_leader and info is not None and info.arguments != current:
                changed.append(SetArguments(name, info.group, current))
        return changed

    def _host(self, info: QueueInfo) -> None:
        existing = info.group in self._store.group_ids()
        voters: list[str] = []
        if existing:
            group_log = self._store.group(info.group)
        else:
            group_log, voters = self._new_group_log(info)
        replica = QueueReplica(info.name, info.group, parse_arguments(info.arguments), group_log)
        self._queues[info.name] = self._new_leader(info, replica)
        self._groups.open_group(info.group, replica)
        if existing or not voters:
            return  # as it was, or waits for the leader to add it
        if voters[0] == self._name:
            self._groups.campaign(info.group)
        else:
            # The placed leader campaigns at once, but its first votes can reach members that have
            # not created the group yet and be dropped. Holding the others' election timers for a
            # while lets its retry win, so placement (client-local, balanced) holds; if the placed
            # node is down, the others elect a leader once the hold is over.
            self._groups.hold_elections(info.group, self._hold_ticks)

    def _new_group_log(self, info: QueueInfo) -> tuple[GroupLog, list[str]]:
        """A new log for the queue's group, and the voters it bootstraps with (none: it waits)."""
        incarnation = self._store.incarnation
        # An initial member bootstraps the group; a member added later starts empty and waits for the leader,
        # as does an initial member whose database is not the one the queue was declared with (wiped).
        initial = list(info.initial_members) if self._name in info.initial_members else []
        if info.initial_incarnations.get(self._name, incarnation) != incarnation:
            log.warning(
                "queue %s: this node's database is new since it was declared; waiting to be added", info.name
            )
            initial = []
        incarnations = tuple(sorted(info.initial_incarnations.items())) if initial else ()
        group_log = self._store.create_group(
            info.group, ConfState(voters=tuple(initial), incarnations=incarnations)
        )
        self._store.commit(sync=True)
        return group_log, initial
