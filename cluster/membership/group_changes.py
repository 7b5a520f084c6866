"""Raft membership changes of groups this node leads: one at a time per group, learners promoted when
caught up.

Every change is a single-server change (`raft_log.confchange`): a new member joins as a learner, receives
the log (or a snapshot) without voting, and becomes a voter only once it has caught up with the leader.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from cluster.errors import NotLeader
from cluster.replication.proposals import ProposalFailed, not_committed
from cluster.replication.raft_host import RaftHost
from raft_log.confchange import ConfChange, ConfChangeKind
from raft_log.errors import (
    ConfChangeInProgressError,
    InvalidConfChangeError,
    NotLeaderError,
    ProposalDroppedError,
)
from raft_log.ready import Status
from raft_log.types import ConfState

log = logging.getLogger(__name__)

POLL_S = 0.02
COMMIT_TIMEOUT_S = 10.0
CATCH_UP_TIMEOUT_S = 60.0
CATCH_UP_DOWN_S = 10.0  # a new member unreachable this long ends its catch-up (`node_down`)


class MembershipRefused(Exception):
    """A membership change that cannot be made now; `code` says why (e.g. `last_node`, `no_quorum`)."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def majority(size: int) -> int:
    """Votes needed in a group of `size` voters."""
    return size // 2 + 1


class GroupChanges:
    """Single-server membership changes of the groups led by this node, serialised per group.

    `is_up(node)` tells whether a peer is reachable right now (this node always is).
    """

    def __init__(self, host: RaftHost, is_up: Callable[[str], bool]) -> None:
        self.host = host
        self.is_up = is_up
        self._locks: dict[str, asyncio.Lock] = {}

    def busy(self, gid: str) -> bool:
        """True while a membership change of `gid` runs on this node."""
        lock = self._locks.get(gid)
        return lock is not None and lock.locked()

    @contextlib.asynccontextmanager
    async def exclusive(self, gid: str, what: str) -> AsyncIterator[None]:
        """Hold the group's change slot, refusing at once when another change holds it."""
        lock = self._locks.setdefault(gid, asyncio.Lock())
        if lock.locked():
            raise MembershipRefused("change_in_progress", f"a membership change of {what} is in progress")
        async with lock:
            yield

    def leader_status(self, gid: str) -> Status:
        """The group's status on its leader (this node), or NotLeader."""
        group = self.host.groups.get(gid)
        if group is None or not group.leading:
            raise NotLeader(f"this node does not lead {gid}", self.host.leader_of(gid))
        return group.raft.status()

    def settled_conf(self, gid: str) -> ConfState | None:
        """The leader's membership once it has applied an entry of its term and every membership change
        the core counts as committed (so no change is pending, and each is durable here), else None."""
        status = self.leader_status(gid)
        group = self.host.groups[gid]
        settled = group.raft.entry_term(group.applied) == status.term and group.conf == status.conf
        return status.conf if settled else None

    def live_voters(self, conf: ConfState, voters: tuple[str, ...]) -> int:
        """How many of `voters` are reachable now (a connection up; this node always is) as the replicas
        `conf` records: a member that came back as another incarnation holds nothing it acknowledged, and
        its votes count for nothing until it is replaced (`replaced_member`).

        Raft's `recent_active` is not used: the leader clears it every election timeout."""
        return sum(1 for v in voters if self.is_up(v) and not self._came_back_as_another(conf, v))

    def all_members_up(self, gid: str) -> bool:
        """True when every member of the group is reachable from its leader."""
        conf = self.leader_status(gid).conf
        members = (*conf.voters, *conf.learners)
        return self.live_voters(conf, members) == len(members)

    async def change(self, gid: str, change: ConfChange) -> None:
        """Propose `change` and wait until this node has applied it: it is then in force, and durable on
        a majority that includes this leader."""
        try:
            index, term = self.host.propose_conf_change(gid, change)
        except ProposalFailed as exc:
            raise not_committed(exc) from exc
        except (NotLeaderError, ProposalDroppedError) as exc:
            raise NotLeader(f"{gid}: {exc}", self.host.leader_of(gid)) from exc
        except ConfChangeInProgressError as exc:
            raise MembershipRefused("change_in_progress", f"{gid}: {exc}") from exc
        except InvalidConfChangeError as exc:
            raise MembershipRefused("invalid_change", f"{gid}: {exc}") from exc
        await self._applied(gid, index, term)

    async def _applied(self, gid: str, index: int, term: int) -> None:
        """Wait until the host applies the entry at `index` with `term`, like a publish.

        The core's commit index acknowledges nothing: followers' acks can move it while the leader's own
        write is still under way, and it is not applied (nor confirmed to anyone) yet."""
        applied = self.host.groups[gid].batcher.watch(index, term)
        try:
            await asyncio.wait_for(applied, COMMIT_TIMEOUT_S)
        except ProposalFailed as exc:
            raise NotLeader(f"{gid}: the membership change failed: {exc}", self.host.leader_of(gid)) from exc
        except TimeoutError as exc:
            reason = f"{gid}: the membership change was not applied in time"
            raise NotLeader(reason, self.host.leader_of(gid)) from exc

    async def add(self, gid: str, node: str) -> None:
        """Add `node` as a learner (unless it is one already), wait until it caught up, promote it."""
        conf = self.leader_status(gid).conf
        if node in conf.voters:
            raise MembershipRefused("already_member", f"{node} is already a member of {gid}")
        if node not in conf.learners:
            await self.change(gid, self.new_learner(node))
        await self.caught_up(gid, node)
        await self.promote(gid, node)

    async def promote(self, gid: str, learner: str) -> None:
        """Make `learner` a voter, refusing (`node_down`) while it is unreachable, or (`no_quorum`) when the
        voters with it would have no live majority: a learner that stopped, or was forgotten, after it
        caught up would otherwise become a voter that never answers, and a group of one voter would
        then need it for every commit (whole-node seed 5103326)."""
        conf = self.leader_status(gid).conf
        if learner not in conf.learners:
            raise MembershipRefused("not_member", f"{learner} is not a learner of {gid}")
        if not self.live_voters(conf, (learner,)):
            raise MembershipRefused("node_down", f"{learner} is unreachable: not promoted in {gid}")
        voters = (*conf.voters, learner)
        if self.live_voters(conf, voters) < majority(len(voters)):
            raise MembershipRefused(
                "no_quorum", f"promoting {learner} would leave {gid} without a live majority of {voters}"
            )
        await self.change(gid, ConfChange(ConfChangeKind.PROMOTE, learner))

    def new_learner(self, node: str) -> ConfChange:
        """The change adding `node` as a learner, recording the incarnation it proved to this node (none
        before it connected, or when it runs a version older than incarnations)."""
        return ConfChange(
            ConfChangeKind.ADD_LEARNER, node, self.host.transport.peer_incarnation(node) or None
        )

    def replaced_member(self, conf: ConfState) -> tuple[str, str] | None:
        """A member of `conf` connected as another incarnation than `conf` records (its database was
        wiped or replaced), with the incarnation recorded for it; else None."""
        for member in (*conf.voters, *conf.learners):
            recorded = conf.incarnation_of(member)
            if recorded is not None and self._came_back_as_another(conf, member):
                return member, recorded
        return None

    def awaits_replacement(self, gid: str, member: str) -> bool:
        """Whether `member` connected as another incarnation than this node's replica of `gid` records
        for it: it holds nothing of the group until the group's leader replaces it."""
        return self._came_back_as_another(self.host.groups[gid].conf, member)

    def _came_back_as_another(self, conf: ConfState, member: str) -> bool:
        """Whether `member` (not this node) proved another incarnation than `conf` records for it."""
        recorded = conf.incarnation_of(member)
        proved = self.proved_incarnation(member)
        return member != self.host.node and recorded is not None and bool(proved) and proved != recorded

    def proved_incarnation(self, member: str) -> str:
        """The incarnation `member` proved to this node (its own for this node; "" when none yet)."""
        if member == self.host.node:
            return self.host.transport.incarnation
        return self.host.transport.peer_incarnation(member)

    def unbound_member(self, conf: ConfState) -> tuple[str, str] | None:
        """A member whose incarnation `conf` does not record, with the one it proved, once every member
        proved one; else None. Older nodes cannot decode BIND_INCARNATION: a member that proved an
        incarnation in its hello runs a version that can."""
        proved = {m: self.proved_incarnation(m) for m in (*conf.voters, *conf.learners)}
        if not all(proved.values()):
            return None
        return next(((m, i) for m, i in proved.items() if conf.incarnation_of(m) is None), None)

    async def bind_unknown_incarnation(self, gid: str) -> str | None:
        """On the leader of `gid` with a settled membership: record the incarnation of one member whose
        incarnation the configuration does not know (`unbound_member`), and wait until it is applied;
        returns that member, or None when there is nothing to bind now."""
        conf = self.settled_conf(gid)
        unbound = None if conf is None else self.unbound_member(conf)
        if unbound is None:
            return None
        member, incarnation = unbound
        await self.change(gid, ConfChange(ConfChangeKind.BIND_INCARNATION, member, incarnation))
        return member

    async def settle_incarnations(self, gid: str, what: str) -> bool:
        """On the leader of `gid`, its membership settled and no change running: make one change towards
        a configuration that records every member's proved incarnation, holding the change slot. A member
        that came back as another incarnation is replaced, else an unknown incarnation is bound. Returns
        whether a change was made; `what` names the group in the log."""
        conf = self.settled_conf(gid)
        if conf is None:
            return False
        replaced = self.replaced_member(conf)
        if replaced is not None:
            member, old = replaced
            async with self.exclusive(gid, what):
                log.warning("%s: replacing %s: incarnation changed (was %s)", what, member, old)
                await self.replace(gid, member)
            log.warning("%s: %s replaced: incarnation changed; it catches up as a learner", what, member)
            return True
        if self.unbound_member(conf) is None:
            return False
        async with self.exclusive(gid, what):
            bound = await self.bind_unknown_incarnation(gid)
        if bound is None:
            return False
        log.info("%s: the incarnation of %s is recorded", what, bound)
        return True

    async def replace(self, gid: str, node: str) -> None:
        """Replace the replica of `node` by its new incarnation: remove the old one (refused, as any removal,
        when that leaves no live majority), then add the new one as a learner; `promotable` and the
        caller's promotion make it a voter once it caught up."""
        await self.remove(gid, node)
        await self.change(gid, self.new_learner(node))

    async def caught_up(self, gid: str, node: str, timeout: float = CATCH_UP_TIMEOUT_S) -> None:
        """Wait until `node` holds everything the leader had committed one poll earlier; `node_down` once
        it has been unreachable for `CATCH_UP_DOWN_S` (stopped, or forgotten) or came back as another
        incarnation than the group records (wiped: it can catch up only once replaced),
        `catch_up_timeout` after `timeout`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        target: int | None = None
        down_since: float | None = None
        while True:
            status = self.leader_status(gid)
            peer = status.progress.get(node)
            if peer is None:
                raise MembershipRefused("not_member", f"{node} left {gid} while catching up")
            if target is not None and peer.match >= target:
                return
            now = loop.time()
            if self.is_up(node):
                down_since = None
            elif down_since is None:
                down_since = now
            if down_since is not None and now - down_since > CATCH_UP_DOWN_S:
                raise MembershipRefused("node_down", f"{node} went unreachable while catching up with {gid}")
            if self._came_back_as_another(status.conf, node):
                raise MembershipRefused("node_down", f"{node} came back wiped while catching up with {gid}")
            if now > deadline:
                raise MembershipRefused("catch_up_timeout", f"{node} did not catch up with {gid} in time")
            target = status.commit
            await asyncio.sleep(POLL_S)

    def promotable(self, gid: str, seen_commit: dict[str, int]) -> str | None:
        """A reachable learner that matched the commit index noted at the previous call (`seen_commit`
        keeps the notes between calls), or None."""
        status = self.leader_status(gid)
        ready = None
        for learner in status.conf.learners:
            peer = status.progress.get(learner)
            noted = seen_commit.get(learner)
            caught_up = peer is not None and noted is not None and peer.match >= noted
            if caught_up and ready is None and self.live_voters(status.conf, (learner,)):
                ready = learner
            seen_commit[learner] = status.commit
        for gone in set(seen_commit) - set(status.conf.learners):
            del seen_commit[gone]
        return ready

    async def remove(self, gid: str, node: str) -> None:
        """Remove `node`, refusing to remove the last voter or to leave the voters without a live majority (a
        member that came back as another incarnation is not live)."""
        conf = self.leader_status(gid).conf
        if node in conf.voters:
            remaining = tuple(v for v in conf.voters if v != node)
            if not remaining:
                raise MembershipRefused("last_node", f"{node} is the last member of {gid}")
            if self.live_voters(conf, remaining) < majority(len(remaining)):
                raise MembershipRefused(
                    "no_quorum", f"removing {node} would leave {gid} without a live majority of {remaining}"
                )
        elif node not in conf.learners:
            raise MembershipRefused("not_member", f"{node} is not a member of {gid}")
        await self.change(gid, ConfChange(ConfChangeKind.REMOVE, node))

    async def transfer(self, gid: str, to: str, timeout: float) -> None:
        """Hand leadership of `gid` to voter `to` and wait until it leads."""
        conf = self.leader_status(gid).conf
        if to not in conf.voters:
            raise MembershipRefused("not_member", f"{to} is not a voting member of {gid}")
        try:
            self.host.transfer_leadership(gid, to)
        except ProposalFailed as exc:
            raise not_committed(exc) from exc
        except NotLeaderError as exc:
            raise NotLeader(f"{gid}: {exc}", self.host.leader_of(gid)) from exc
        deadline = asyncio.get_running_loop().time() + timeout
        while self.host.leader_of(gid) != to:
            if asyncio.get_running_loop().time() > deadline:
                raise MembershipRefused("transfer_failed", f"{to} did not take over {gid} in {timeout:.0f}s")
            await asyncio.sleep(POLL_S)
