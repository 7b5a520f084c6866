"""The queue groups a node hosts, kept in step with the metadata.

A queue listing this node gets its group opened: from the node's database when it was there before;
else bootstrapped with the queue's initial members when this node is one of them (the placed leader
campaigns at once, the others hold their elections a while), and empty, waiting for the leader to add
it, when it is a member added later or its database is not the one the queue was declared with. For an
initial member the declaration recorded no incarnation for (declared before it registered), the
registry tells: such a node opens the group only once it registered, so the database it first registered
is the one the declaration's bootstrap belongs to; another database registered under its name, or its
own registered as having replaced an earlier one (`NodeInfo.earlier_incarnation`), means it was wiped
since, and would otherwise start the group afresh as a voter that holds nothing.

A replica is dropped only on evidence that lasts: its queue was deleted (or declared again as another
group: group ids are never reused), or its own group committed this node's removal. A queue that no
longer lists this node while its group, as this replica knows it, still does keeps its replica, which
is dropped once the group says so: the metadata may be behind the group (a removal since undone), and
dropping a voter's replica loses what it acknowledged. Until the metadata has replayed what its log held
when the node started (`MetadataReplay`), its states are older than what the node had reached before:
only groups the database holds are opened then; none is created, closed or dropped.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from cluster.queues.policies import applied_policy
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_replica import QueueReplica
from cluster.replication.entry_codec import QUEUE_OP_VERSION
from metadata_state.commands import SetArguments
from metadata_state.records import NodeInfo, PolicySet, QueueInfo
from queue_state.arguments import QueueConfig, parse_arguments
from raft_log.storage.node_store import GroupLog, NodeStore
from raft_log.types import ConfState

log = logging.getLogger(__name__)

STALE_VISITS = 64
"""Stale entries the timers' heap may hold beyond twice the live ones before it is rebuilt."""

NewDoor = Callable[[QueueInfo, QueueReplica], QueueDoor]


class QueueGroups(Protocol):
    """Where queue groups run (`RaftHost`)."""

    def open_group(self, gid: str, app: QueueReplica) -> object: ...

    def close_group(self, gid: str, *, drop: bool, tombstone: bool = True) -> None: ...

    def lists_member(self, gid: str, node: str) -> bool: ...

    def campaign(self, gid: str) -> None: ...

    def hold_elections(self, gid: str, ticks: int) -> None: ...


class QueueHosting:
    """The queues whose groups this node hosts, each with its door (`QueueDoor`, built by
    `new_door`). `hold_ticks` is how long the initial members other than the placed leader hold their
    elections in a new group."""

    def __init__(
        self,
        name: str,
        store: NodeStore,
        groups: QueueGroups,
        new_door: NewDoor,
        hold_ticks: int,
        reads: int = QUEUE_OP_VERSION,
        *,
        joined: bool = False,
    ) -> None:
        """`reads` is the newest queue operations version this node's build reads; `joined` when this
        node's data directory was made by joining a running cluster (`node.json` records the join)."""
        self._name = name
        self._joined = joined
        self._reads = reads
        self._store = store
        self._groups = groups
        self._new_door = new_door
        self._hold_ticks = hold_ticks
        self._queues: dict[str, QueueDoor] = {}
        self._led: dict[str, QueueDoor] = {}  # the hosted queues this node leads (`leadership_changed`)
        self._timed: dict[str, QueueDoor] = {}  # those of them whose timer runs at every call
        self._visit_at: dict[str, float] = {}  # those whose timer runs later, and when
        # the same as a heap of (when, push, name); a stale entry (visited, dropped) is skipped, and holds no
        # door: a dropped queue's replica must not live on until the time its timer named
        self._later: list[tuple[float, int, str]] = []
        self._pushes = itertools.count()
        self._changed: dict[str, QueueDoor] = {}  # those of them changed since `take_changed`
        self._unlisted: set[str] = set()  # hosted queues the metadata no longer lists this node in
        # each led queue's applied configuration as last read, and its arguments (`changed_arguments`)
        self._arguments: dict[str, tuple[QueueConfig, dict[str, Any]]] = {}

    @property
    def queues(self) -> Mapping[str, QueueDoor]:
        """The door of every queue hosted here, by queue name (leading or following)."""
        return self._queues

    @property
    def led(self) -> Mapping[str, QueueDoor]:
        """The door of every queue this node leads, by queue name."""
        return self._led

    def reconcile(
        self, declared: Mapping[str, QueueInfo], registered: Mapping[str, NodeInfo], replayed: bool
    ) -> None:
        """Host the queues of `declared` (the metadata's) that list this node, and drop what lasting
        evidence says is gone; before the metadata is `replayed`, only open what the database holds.
        `registered` is the metadata's node registry."""
        if replayed:
            for name, queue in list(self._queues.items()):
                info = declared.get(name)
                if info is None or info.group != queue.group:
                    self._drop(name, "deleted", tombstone=False)  # its group id is never used again
                elif self._name in info.members:
                    self._unlisted.discard(name)
                elif name not in self._unlisted:
                    self._unlisted.add(name)
                    log.info(
                        "queue %s: no longer listed here; its replica stays until its group removes it", name
                    )
            self._drop_removed()
        stored = frozenset() if replayed else frozenset(self._store.group_ids())
        created = False
        for info in declared.values():
            if (
                self._name in info.members
                and info.name not in self._queues
                and (replayed or info.group in stored)
            ):
                created |= self._host(info, registered.get(self._name))
        if created:  # one fsync for every group created, before any round runs for them
            self._store.commit(sync=True)

    def on_timer(self, now_ms: float) -> None:
        """Run the leader timers of the queues led here (TTL, leases, queue expiry, consumer timeouts):
        at every call those that asked for it, at `now_ms` (a monotonic clock's) those that named a later
        time, and those whose timer found nothing could come due not until they want it again
        (`queue_changed`); drop the replicas of queues that no longer list this node once their group
        removed it."""
        self._drop_removed()
        while self._later and self._later[0][0] <= now_ms:
            due, _, name = heapq.heappop(self._later)
            if self._visit_at.get(name) == due:  # else visited or dropped since
                del self._visit_at[name]
                if (door := self._led.get(name)) is not None:
                    self._timed[name] = door
        for queue in list(self._timed.values()):
            wait = queue.on_timer()
            if wait == 0 or self._timed.get(queue.name) is not queue:
                continue
            del self._timed[queue.name]
            if wait is not None and (due := now_ms + wait) < self._visit_at.get(queue.name, math.inf):
                self._visit_at[queue.name] = due
                heapq.heappush(self._later, (due, next(self._pushes), queue.name))
        if len(self._later) > 2 * len(self._visit_at) + STALE_VISITS:  # mostly stale: keep what counts
            self._later = [(due, next(self._pushes), name) for name, due in self._visit_at.items()]
            heapq.heapify(self._later)

    def queue_changed(self, door: QueueDoor) -> None:
        """Queue `door` applied an entry or opened a session: while this node leads it, its timer runs
        again (something may come due) and `take_changed` names it."""
        if self._led.get(door.name) is door:
            self._timed[door.name] = self._changed[door.name] = door

    def leadership_changed(self, door: QueueDoor, is_leader: bool) -> None:
        """This node started or stopped leading queue `door`: its timers run while it leads."""
        if is_leader and self._queues.get(door.name) is door:
            self._led[door.name] = self._timed[door.name] = self._changed[door.name] = door
        elif self._led.get(door.name) is door:
            del self._led[door.name]
            self._timed.pop(door.name, None)
            self._visit_at.pop(door.name, None)

    def _drop_removed(self) -> None:
        for name in list(self._unlisted):
            if not self._groups.lists_member(self._queues[name].group, self._name):
                self._drop(name, "removed from its group", tombstone=True)

    def _drop(self, name: str, why: str, *, tombstone: bool) -> None:
        """Stop hosting queue `name` and drop its replica."""
        queue = self._queues.pop(name)
        self._led.pop(name, None)
        self._timed.pop(name, None)
        self._visit_at.pop(name, None)
        self._changed.pop(name, None)
        self._arguments.pop(name, None)
        self._unlisted.discard(name)
        self._groups.close_group(queue.group, drop=True, tombstone=tombstone)
        log.info("queue %s: replica of group %s dropped: %s", name, queue.group, why)

    def take_changed(self, every: bool) -> list[QueueDoor]:
        """The queues led here that applied an entry, opened a session or were taken over since the last
        call (`queue_changed`, `leadership_changed`); with `every`, all the queues led here."""
        changed = (
            list(self._led.values())
            if every
            else [door for name, door in self._changed.items() if self._led.get(name) is door]
        )
        self._changed.clear()
        return changed

    def apply_policies(
        self, policies: PolicySet, revision: int, led: Iterable[QueueDoor] | None = None
    ) -> None:
        """Have each queue this node leads (of `led`, when given) apply the policy the metadata's
        `policies` (with its operator policies), at `revision`, choose for it (a queue that applies that
        revision already costs a comparison)."""
        for queue in list(self._led.values()) if led is None else led:
            queue.apply_policy(revision, functools.partial(applied_policy, policies, queue.name))

    def changed_arguments(
        self, declared: Mapping[str, QueueInfo], led: Iterable[QueueDoor]
    ) -> list[SetArguments]:
        """The commands recording the arguments of the queues of `led` this node leads (and serves: it
        applied all its predecessors committed) that were changed at runtime and differ from those
        `declared`."""
        changed = []
        for queue in led:
            name = queue.name
            info = declared.get(name)
            if not queue.serving or info is None:
                continue
            config = queue.declared_config
            read = self._arguments.get(name)
            if read is None or read[0] is not config:
                read = self._arguments[name] = (config, config.to_arguments())
            if info.arguments != read[1]:
                changed.append(SetArguments(name, info.group, read[1]))
        return changed

    def _host(self, info: QueueInfo, mine: NodeInfo | None) -> bool:
        """Open the group of queue `info`; `mine` is this node's registration (None before one). True
        when its log was created, unwritten: the caller commits it before it yields."""
        existing = self._store.has_group(info.group)
        voters: list[str] = []
        if existing:
            group_log = self._store.group(info.group)
        else:
            bootstraps = self._bootstraps(info, mine)
            if bootstraps is None:
                log.info("queue %s: hosted once this node's registration is applied", info.name)
                return False
            group_log, voters = self._new_group_log(info, bootstraps)
        replica = QueueReplica(info.name, info.group, parse_arguments(info.arguments), group_log, self._reads)
        self._queues[info.name] = self._new_door(info, replica)
        self._groups.open_group(info.group, replica)
        if existing or not voters or info.membership_changed:
            return not existing  # waits for the leader to add it, or bootstraps late: a leader is elected
        if voters[0] == self._name:
            self._groups.campaign(info.group)
        else:
            # The placed leader campaigns at once, but its first votes can reach members that have
            # not created the group yet and be dropped. Holding the others' election timers for a
            # while lets its retry win, so placement (client-local, balanced) holds; if the placed
            # node is down, the others elect a leader once the hold is over.
            self._groups.hold_elections(info.group, self._hold_ticks)
        return True

    def _bootstraps(self, info: QueueInfo, mine: NodeInfo | None) -> bool | None:
        """Whether this node bootstraps queue `info`'s group as an initial member; None while that waits
        for this node's registration (`mine`, None before one) to name its database. A member added
        later starts empty and waits for the leader, as does an initial member whose database is not the
        one the queue was declared with (wiped, or set aside as damaged).

        A declaration that recorded no incarnation for this node is read against the registry: the
        first database registered under its name is the declared one, and one that replaced an earlier
        is not. The registry cannot vouch for a database made by a join: a node forgotten (its record
        erased) and joined again under its name registers afresh, so such a member waits. Once the
        membership changed, an initial member bootstraps late only as the declared database, and only
        if that database never held the group (a dropped replica's votes are lost with it)."""
        if self._name not in info.initial_members:
            return False
        incarnation = self._store.incarnation
        recorded = info.initial_incarnations.get(self._name)
        if recorded is None:
            if mine is None or not mine.incarnation:
                return None
            if self._joined:
                log.warning(
                    "queue %s: declared before this joined node registered; waiting to be added", info.name
                )
                return False
            recorded = mine.earlier_incarnation or mine.incarnation
        if info.membership_changed:
            late = recorded == incarnation and self._store.never_held(info.group)
            if not late:
                log.info(
                    "queue %s: not its declared database, or it may have held the group; waiting", info.name
                )
            return late
        if recorded != incarnation:
            log.warning(
                "queue %s: this node's database is new since it was declared; waiting to be added", info.name
            )
            return False
        return True

    def _new_group_log(self, info: QueueInfo, bootstraps: bool) -> tuple[GroupLog, list[str]]:
        """A new log for the queue's group, and the voters it bootstraps with (none: it waits)."""
        initial = list(info.initial_members) if bootstraps else []
        incarnations = tuple(sorted(info.initial_incarnations.items())) if initial else ()
        group_log = self._store.create_group(
            info.group, ConfState(voters=tuple(initial), incarnations=incarnations)
        )
        return group_log, initial
