"""A queue's replica set, changed on the queue's leader; the metadata's `members` list follows the group.

Adding a member first lists it in the metadata (so the new node opens the group, empty, and waits for
the leader), then adds it to the Raft group as a learner and promotes it once it caught up. Removing a
member changes the group first and the metadata after. The leader's periodic `heal` finishes what an
interrupted change left behind: it makes the metadata match the group and promotes caught-up learners.
It also replaces a member that connects as another incarnation than the group records (its database was
wiped): the old replica is removed and the new one added as a learner, promoted once caught up; and it
records the incarnations of a group created before incarnations existed, once every member proved one.

Every member list sent to the metadata carries a fence `[term, sequence]`: the group's term in which
this node leads and decided the list, and a number this node raises with each decision. Terms order
the group's leaders and the sequence orders one leader's decisions, so the metadata can refuse a list
decided before the one it holds (`metadata_state/machine.py`). A learner becomes a voter only after the
metadata holds a fence of the promoting leader's term, so no list of an earlier term can unlist it.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

from cluster.errors import NodeNotFound, NotLeader, QueueNotFound
from cluster.membership.group_changes import GroupChanges, MembershipRefused
from cluster.membership.host import MembershipHost
from cluster.metadata.metadata_door import MetadataDoor
from metadata_state.commands import SetMembers
from raft_log.confchange import ConfChange, ConfChangeKind
from raft_log.types import ConfState, Repair

log = logging.getLogger(__name__)

TRANSFER_TIMEOUT_S = 5.0


def ordered_members(listed: list[str], conf: ConfState) -> list[str]:
    """The group's members in the metadata's order (preferred leader first), newcomers last."""
    in_group = [*conf.voters, *conf.learners]
    return [m for m in listed if m in in_group] + [m for m in in_group if m not in listed]


class QueueMembers:
    """Replica-set operations of the queues this node leads."""

    def __init__(self, node: MembershipHost, door: MetadataDoor, changes: GroupChanges) -> None:
        self.node = node
        self.door = door
        self.changes = changes
        self._seen_commit: dict[str, dict[str, int]] = {}
        self._decisions = itertools.count(1)

    def require_cluster_node(self, name: str) -> None:
        """NodeNotFound unless `name` is a registered member of the cluster (a joining one included)."""
        if not self.node.status.is_cluster_node(name):
            raise NodeNotFound(f"node '{name}' is not a member of the cluster")

    def _settled(self, gid: str) -> tuple[ConfState, int] | None:
        """The leader's settled membership and its term (the term of the fences it decides), or None."""
        conf = self.changes.settled_conf(gid)
        return None if conf is None else (conf, self.changes.leader_status(gid).term)

    def _require_settled(self, gid: str) -> tuple[ConfState, int]:
        settled = self._settled(gid)
        if settled is None:
            raise NotLeader(f"the new leader of {gid} has not settled its membership yet", self.node.name)
        return settled

    def _fence(self, term: int) -> tuple[int, int]:
        """The fence of a member list this node decides now as the leader of `term`."""
        return term, next(self._decisions)

    async def add(self, queue: str, member: str) -> list[str]:
        """Add a replica of `queue` on `member`; returns the new member list."""
        queue_door = self.node.directory.leading_door(queue)
        self.require_cluster_node(member)
        if not self.node.status.is_up(member):
            raise MembershipRefused("node_down", f"node '{member}' is not reachable")
        async with self.changes.exclusive(queue_door.group, f"queue '{queue}'"):
            conf, term = self._require_settled(queue_door.group)
            if member in conf.voters:
                raise MembershipRefused("already_member", f"node '{member}' is already a member of '{queue}'")
            members = [*ordered_members(self.node.directory.info(queue).members, conf), member]
            members = list(dict.fromkeys(members))
            await self.publish_members(queue, members, term)
            try:
                await self.changes.add(queue_door.group, member)
            except MembershipRefused as exc:
                if exc.code in ("catch_up_timeout", "node_down"):
                    await self._undo_add(queue, queue_door.group, member)
                raise
            log.info("queue %s: %s added, members now %s", queue, member, members)
            return members

    async def _undo_add(self, queue: str, gid: str, member: str) -> None:
        await self.changes.change(gid, ConfChange(ConfChangeKind.REMOVE, member))
        listed = self.node.directory.info(queue).members
        conf, term = self._require_settled(gid)
        await self.publish_members(queue, ordered_members(listed, conf), term)

    async def delete(self, queue: str, member: str) -> list[str]:
        """Remove the replica of `queue` on `member`; returns the new member list."""
        queue_door = self.node.directory.leading_door(queue)
        async with self.changes.exclusive(queue_door.group, f"queue '{queue}'"):
            conf, term = self._require_settled(queue_door.group)
            listed = self.node.directory.info(queue).members
            if member not in (*conf.voters, *conf.learners):
                if member not in listed:
                    raise NodeNotFound(f"node '{member}' is not a member of queue '{queue}'")
            else:
                await self.changes.remove(queue_door.group, member)
            remaining = [m for m in listed if m != member]
            members = ordered_members(remaining, self._conf_after_removal(conf, member))
            await self.publish_members(queue, members, term)
            log.info("queue %s: %s removed, members now %s", queue, member, members)
            return members

    @staticmethod
    def _conf_after_removal(conf: ConfState, member: str) -> ConfState:
        return ConfState(
            tuple(v for v in conf.voters if v != member), tuple(v for v in conf.learners if v != member)
        )

    async def transfer_leader(self, queue: str, to: str) -> None:
        """Hand the leadership of `queue` to its voting member `to` (no membership change)."""
        queue_door = self.node.directory.leading_door(queue)
        async with self.changes.exclusive(queue_door.group, f"queue '{queue}'"):
            await self.changes.transfer(queue_door.group, to, TRANSFER_TIMEOUT_S)

    async def publish_members(self, queue: str, members: list[str], term: int) -> None:
        """Make the metadata list `members` for `queue`, decided now as the group's leader of `term`, and
        wait until this node sees it applied; NotLeader once a newer decision is applied instead."""
        group = self.node.directory.info(queue).group
        fence = self._fence(term)

        def taken() -> bool:
            current = self.node.metadata.queues.get(queue)
            if current is None or current.group != group:
                raise QueueNotFound(f"queue '{queue}' was deleted")
            if current.members_fence > list(fence):
                raise NotLeader(
                    f"a newer leader of '{queue}' changed its members", self.node.directory.leader_of(queue)
                )
            return current.members_fence == list(fence)

        if not await self.door.relay_until(SetMembers(queue, group, tuple(members), fence), taken):
            reason = f"the metadata did not take the members of '{queue}' in time"
            raise NotLeader(reason, self.node.status.meta_leader())

    async def heal(self, queue: str) -> None:
        """On the leader, when no change runs: replace a member that came back as another incarnation or
        record an unknown incarnation (`GroupChanges.settle_incarnations`); else align the metadata's
        members with the group, then promote a caught-up learner.

        A learner is promoted only once the metadata lists exactly the group under a fence of this
        leader's term (else this pass publishes one), so that no list decided in an earlier term can
        unlist the new voter afterwards."""
        queue_door = self.node.queues.get(queue)
        if queue_door is None or not queue_door.is_leader or self.changes.busy(queue_door.group):
            return
        if await self.changes.settle_incarnations(queue_door.group, f"queue '{queue}'"):
            return
        settled = self._settled(queue_door.group)
        if settled is None:
            return
        conf, term = settled
        seen = self._seen_commit.setdefault(queue_door.group, {})
        learner = self.changes.promotable(queue_door.group, seen)
        info = self.node.directory.info(queue)
        wanted = ordered_members(info.members, conf)
        if learner is not None and info.members == wanted and info.members_fence[0] == term:
            async with self.changes.exclusive(queue_door.group, f"queue '{queue}'"):
                await self.changes.promote(queue_door.group, learner)
            log.info("queue %s: promoted caught-up learner %s", queue, learner)
        elif learner is not None or info.members != wanted:
            self.door.relay(SetMembers(queue, info.group, tuple(wanted), self._fence(term)))

    def leader_view(self, queue: str) -> list[dict[str, Any]]:
        """Each member as the queue's leader (this node) sees it: membership, match, lag, liveness."""
        queue_door = self.node.directory.leading_door(queue)
        status = self.changes.leader_status(queue_door.group)
        replaced = self.changes.replaced_member(status.conf)
        rows = []
        for member in ordered_members(self.node.directory.info(queue).members, status.conf):
            peer = status.progress.get(member)
            rows.append(
                {
                    "node": member,
                    "membership": "voter" if member in status.conf.voters else "learner",
                    "match": peer.match if peer else None,
                    "lag": status.last_index - peer.match if peer else None,
                    "recently_active": member == self.node.name or bool(peer and peer.recent_active),
                    "counted": not (peer and peer.repairing),
                    "replaced": "incarnation changed" if replaced and replaced[0] == member else None,
                    "up": self.node.status.is_up(member),
                }
            )
        for member in self.node.directory.info(queue).members:
            if member not in status.conf.voters and member not in status.conf.learners:
                rows.append({"node": member, "membership": "pending", "up": self.node.status.is_up(member)})
        return rows

    def checkpoint(self, queue: str) -> dict[str, Any]:
        """This node's replica of `queue` takes a snapshot now (RabbitMQ's force_checkpoint): its status
        after, `requested` when the snapshot waits for the end of the round being written."""
        info = self.node.directory.info(queue)
        try:
            requested = self.changes.host.checkpoint(info.group)
        except KeyError:
            raise NodeNotFound(f"node '{self.node.name}' hosts no replica of queue '{queue}'") from None
        return {**self.local_status(queue), "requested": requested}

    def local_status(self, queue: str) -> dict[str, Any]:
        """This node's replica of `queue`, as its own Raft group sees it."""
        info = self.node.directory.info(queue)
        group = self.changes.host.groups.get(info.group)
        if group is None:
            raise NodeNotFound(f"node '{self.node.name}' hosts no replica of queue '{queue}'")
        status = group.raft.status()
        me = self.node.name
        conf = status.conf
        membership = "voter" if me in conf.voters else "learner" if me in conf.learners else "none"
        return {
            "node": me,
            "raft_state": status.role.value,
            "membership": membership,
            "last_log_index": status.last_index,
            "commit_index": status.commit,
            "last_applied": group.applied,
            "snapshot_index": group.snapshot_index,
            "term": status.term,
            "leader": status.leader,
            "repairing": _repairing(status.repair) or self.node.status.rebinding(info.group),
            "halted": None
            if group.halted is None
            else {"index": group.halted.index, "reason": group.halted.reason},
        }


def _repairing(repair: Repair | None) -> dict[str, Any] | None:
    """A damaged replica's repair as shown to operators: why, where, and through which index."""
    if repair is None:
        return None
    return {"reason": repair.reason, "index": repair.index, "through": repair.through}
