"""Cluster membership: nodes joining a running cluster (`--join`) and permanently lost nodes forgotten.

The metadata leader registers a joining node and adds it to the metadata group as a learner; the
joining node starts with an empty metadata group and receives the leader's snapshot and log; the
leader promotes it to voter once it has caught up (`heal`, run periodically). The same upkeep records the
seeds' incarnations, unknown when the group bootstraps, and replaces a member whose database was wiped.
"""

from __future__ import annotations

import asyncio
import logging

from cluster.config import Address, ConfigError
from cluster.errors import BadRequest, NodeNotFound
from cluster.membership.group_changes import GroupChanges, MembershipRefused
from cluster.membership.host import MembershipHost
from cluster.membership.join import JoinNotYet, JoinRefused, JoinRequester
from cluster.metadata.metadata_door import MetadataDoor
from metadata_state.records import NodeInfo

log = logging.getLogger(__name__)

JOIN_RETRY_S = 1.0


class ClusterMembers:
    """The metadata group's membership, changed on its leader."""

    def __init__(
        self, node: MembershipHost, door: MetadataDoor, changes: GroupChanges, meta_group: str
    ) -> None:
        self.node = node
        self.door = door
        self.changes = changes
        self.meta_group = meta_group
        self._seen_commit: dict[str, int] = {}

    def _members(self) -> tuple[str, ...]:
        conf = self.changes.leader_status(self.meta_group).conf
        return (*conf.voters, *conf.learners)

    async def join(self, name: str, http: str, raft: str) -> list[NodeInfo]:
        """Register a joining node and add it to the metadata group as a learner; returns every node. Refused
        (`change_in_progress`, which the joining node retries) while this node, the metadata leader, has
        not registered its own addresses: the joining node learns its first peers from the answer, and
        would otherwise know none to link with (it learns the others from its peers, `AddressExchange`)."""
        try:
            address = Address.parse(raft, what="raft")
        except ConfigError as exc:
            raise BadRequest(str(exc)) from exc
        if self.node.name not in self.node.metadata.nodes:
            raise MembershipRefused(
                "change_in_progress",
                f"{self.node.name}, the metadata leader, has not registered yet; try again",
            )
        known = self.node.metadata.nodes.get(name)
        moved = known is None or (known.http, known.raft) != (http, raft)
        if name in self._members() and known is not None and moved:
            raise MembershipRefused("name_taken", f"a node named '{name}' is a member with other addresses")
        async with self.changes.exclusive(self.meta_group, "the cluster"):
            if moved:  # its incarnation follows from the node itself once it runs with the metadata
                await self.door.register_node(name, http, raft)
            self.node.transport.set_peer(name, address)
            if name not in self._members():
                await self.changes.change(self.meta_group, self.changes.new_learner(name))
                log.info("node %s joined as a learner of the metadata group", name)
        return sorted(self.node.metadata.nodes.values(), key=lambda n: n.name)

    async def forget(self, name: str) -> None:
        """Remove a permanently lost node from the metadata group and the node registry."""
        if name not in self._members() and name not in self.node.metadata.nodes:
            raise NodeNotFound(f"node '{name}' is not a member of the cluster")
        if self.node.status.is_up(name):
            raise MembershipRefused("node_running", f"node '{name}' is running; stop it before forgetting it")
        async with self.changes.exclusive(self.meta_group, "the cluster"):
            if name in self._members():
                await self.changes.remove(self.meta_group, name)
            if name in self.node.metadata.nodes:
                await self.door.forget_node(name)
        self.node.transport.remove_peer(name)
        log.info("node %s forgotten", name)

    async def heal(self) -> None:
        """On the metadata leader, one change at a time: replace a member that came back as another
        incarnation or record an unknown one (the group bootstraps from seeds with none), else add a
        registered node the group lacks, else promote one learner that has caught up."""
        if not self.node.metadata.is_leader or self.changes.busy(self.meta_group):
            return
        if await self.changes.settle_incarnations(self.meta_group, "the cluster"):
            return
        if (missing := self._registered_outside()) is not None:
            async with self.changes.exclusive(self.meta_group, "the cluster"):
                await self.changes.change(self.meta_group, self.changes.new_learner(missing))
            log.warning(
                "node %s was registered but not a member of the metadata group: added as a learner", missing
            )
            return
        learner = self.changes.promotable(self.meta_group, self._seen_commit)
        if learner is not None:
            async with self.changes.exclusive(self.meta_group, "the cluster"):
                await self.changes.promote(self.meta_group, learner)
            log.info("node %s promoted to voter of the metadata group", learner)

    def _registered_outside(self) -> str | None:
        """A registered node that runs (connected, having proved an incarnation) but is neither voter nor
        learner of the metadata group: a replacement or a join cut short between its two changes. (A wiped
        node registers its new incarnation at once, relaying through a peer, while the group still lists
        its old one: it is replaced, `settle_incarnations`, rather than added.)"""
        members = self._members()
        for name in sorted(self.node.metadata.nodes):
            if name not in members and self.node.status.is_up(name) and self.changes.proved_incarnation(name):
                return name
        return None

    async def join_through(self, url: str, requester: JoinRequester) -> None:
        """On a joining node: ask the member at `url` to add this node, retrying until it answers."""
        config = self.node.config
        me = NodeInfo(self.node.name, config.http_url, str(config.raft_address))
        while True:
            try:
                nodes = await requester.request_join(url, me)
            except JoinRefused as exc:
                log.error("joining through %s refused: %s", url, exc)
                return
            except JoinNotYet as exc:
                log.info("joining through %s: %s; retrying", url, exc)
            else:
                for info in nodes:
                    if info.name != self.node.name:
                        self.node.transport.set_peer(info.name, Address.parse(info.raft, what="raft"))
                log.info("joined the cluster through %s", url)
                return
            await asyncio.sleep(JOIN_RETRY_S)
