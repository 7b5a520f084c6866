"""What a node knows of itself and of its cluster, read-only: readiness, damage and repair, how far the
check of its database got, which peers are up, the metadata group's members and leader, node addresses,
and the state of the Raft groups it hosts. Health, metrics, forwarding and membership read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from cluster.metadata.metadata_view import MetadataView
from cluster.replication.raft_host import Group, Halted
from cluster.store.store_check import StoreCheck
from cluster.store.store_damage import Damage
from raft_log.types import ConfState


class RaftGroups(Protocol):
    """The Raft groups this node hosts (`RaftHost`)."""

    @property
    def groups(self) -> Mapping[str, Group]: ...

    @property
    def leader_changes(self) -> int: ...

    def leader_of(self, gid: str) -> str | None: ...


class LivePeers(Protocol):
    """The peers the transport knows (`Transport`)."""

    def peers(self) -> Mapping[str, bool]:
        """Each known peer, and whether an outbound connection to it is up."""
        ...


@dataclass(frozen=True)
class GroupsSummary:
    """The Raft groups this node hosts: how many, how many it leads, how many are quiet (idle, costing no
    ticks), the queue groups without a known leader, the groups still repairing their log and those halted
    here (an entry this node cannot read)."""

    hosted: int
    led: int
    quiet: int
    without_leader: list[str]
    repairing: list[str]
    halted: dict[str, Halted]


@dataclass(frozen=True)
class GroupState:
    """One Raft group this node hosts, as metrics report it: its queue ("" for the metadata group), this
    node's role, term and log positions, and the entry data applied since its last snapshot."""

    group: str
    queue: str
    role: str
    term: int
    last_index: int
    commit_index: int
    applied_index: int
    snapshot_index: int
    applied_bytes: int


class NodeStatus:
    """One node's read-only view of itself and its cluster."""

    def __init__(
        self,
        name: str,
        meta_group: str,
        raft: RaftGroups,
        peers: LivePeers,
        metadata: MetadataView,
        incarnation: str,
        damage: Damage | None,
        store_check: StoreCheck,
    ) -> None:
        self.name = name
        self._meta_group = meta_group
        self._raft = raft
        self._peers = peers
        self._metadata = metadata
        self._incarnation = incarnation
        self._damage = damage
        self.store_check = store_check

    def is_up(self, name: str) -> bool:
        """True for this node and for peers with a live Raft connection."""
        return name == self.name or bool(self._peers.peers().get(name))

    def meta_leader(self) -> str | None:
        """The node leading the metadata group, when known."""
        return self._raft.leader_of(self._meta_group)

    def cluster_members(self) -> list[str]:
        """Every node of the cluster: the metadata group's voters."""
        return list(self._meta_conf().voters)

    def metadata_members(self) -> tuple[str, ...]:
        """The metadata group's voters and learners (nodes joining)."""
        conf = self._meta_conf()
        return (*conf.voters, *conf.learners)

    def is_cluster_node(self, name: str) -> bool:
        """True for a registered node of the metadata group, a joining learner included."""
        return name in self._metadata.nodes and name in self.metadata_members()

    def node_http(self, name: str | None) -> str | None:
        """The HTTP base URL of a node, from the metadata."""
        info = self._metadata.nodes.get(name) if name else None
        return info.http if info else None

    def readiness(self) -> str:
        """`ok` once a metadata leader is known, this node's addresses are registered and the user
        table is initialised (before that every login is answered 503); else `no_quorum` or
        `initialising`; `halted` once the metadata group halted here (this node's view of the cluster
        no longer moves)."""
        if self._raft.groups[self._meta_group].halted is not None:
            return "halted"
        if self.meta_leader() is None:
            return "no_quorum"
        registered = self.name in self._metadata.nodes
        return "ok" if registered and self._metadata.users_initialised else "initialising"

    def damage_status(self) -> dict[str, Any] | None:
        """The latest damage found in this node's database: why, when, where the copy is kept, and whether
        this incarnation is still `repairing` (`groups_not_rebound`); None when none was found."""
        if self._damage is None:
            return None
        return {**asdict(self._damage), "repairing": bool(self.groups_not_rebound())}

    def groups_not_rebound(self) -> list[str]:
        """The groups this node belongs to (the metadata's, and those of the queues listing it) that do not
        yet hold it as a voter of its own incarnation with nothing left to repair."""
        wanted = [self._meta_group] + [q.group for q in self._metadata.queues_on(self.name)]
        return [gid for gid in wanted if not self._rebound(gid)]

    def rebinding(self, gid: str) -> dict[str, Any] | None:
        """Why this node's replica in group `gid` is a new incarnation not yet rebound, for `quorum_status`;
        None when it is rebound, or no damage was found."""
        if self._damage is None or self._rebound(gid):
            return None
        reason = f"new incarnation: database damaged ({self._damage.reason})"
        return {"reason": reason, "index": None, "through": None}

    def groups(self) -> GroupsSummary:
        """The Raft groups this node hosts, as health reports them."""
        groups = self._raft.groups
        return GroupsSummary(
            hosted=len(groups),
            led=sum(1 for group in groups.values() if group.leading),
            quiet=sum(1 for group in groups.values() if group.raft.quiet),
            without_leader=sorted(
                gid for gid in groups if gid != self._meta_group and self._raft.leader_of(gid) is None
            ),
            repairing=sorted(gid for gid, group in groups.items() if group.raft.repair is not None),
            halted={gid: group.halted for gid, group in sorted(groups.items()) if group.halted is not None},
        )

    def group_states(self) -> list[GroupState]:
        """Every Raft group this node hosts, by group id."""
        queues = {info.group: name for name, info in self._metadata.queues.items()}
        states = []
        for gid, group in sorted(self._raft.groups.items()):
            status = group.raft.status()
            states.append(
                GroupState(
                    gid,
                    queues.get(gid, ""),
                    status.role.value,
                    status.term,
                    status.last_index,
                    status.commit,
                    group.applied,
                    group.snapshot_index,
                    group.applied_bytes,
                )
            )
        return states

    @property
    def leader_changes(self) -> int:
        """Leadership changes this node has seen in its groups."""
        return self._raft.leader_changes

    def _meta_conf(self) -> ConfState:
        return self._raft.groups[self._meta_group].raft.conf

    def _rebound(self, gid: str) -> bool:
        group = self._raft.groups.get(gid)
        if group is None:
            return False
        conf = group.raft.conf
        mine = conf.incarnation_of(self.name) == self._incarnation
        return self.name in conf.voters and mine and group.raft.repair is None
