"""A quorumq node: storage, transport, the metadata group and every queue group it hosts.

Bootstrap: on the first start a node given seeds creates the metadata group with the seeds as voters
(every seed lists the same set). Later starts take membership from the data directory. Each node
registers its own addresses in the metadata; every node reconciles what it hosts with the metadata
after each change (open new queue groups, drop deleted ones, learn peers' addresses).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cluster.codec_reads import CodecReads
from cluster.config import Address, ConfigError, NodeConfig
from cluster.dead_lettering.dispatcher import DeadLetterDispatcher
from cluster.dead_lettering.publisher import ClusterPublisher, RemotePublisher
from cluster.durable_files import make_directory, sync_directory, write_durably
from cluster.entry_codec import QUEUE_OP_VERSION
from cluster.errors import BadRequest, NotLeader, QueueConflict, QueueNotFound
from cluster.leader_clock import LeaderClock
from cluster.membership.group_changes import GroupChanges
from cluster.membership.join import JoinRequester
from cluster.membership.membership import Membership
from cluster.metadata.commands import Delete, RegisterNode, SetArguments
from cluster.metadata.records import NodeInfo, QueueInfo
from cluster.metadata.replies import Conflict, Created, Exists, NotFound, Refused
from cluster.metadata_app import MetadataApp
from cluster.metadata_door import MetadataDoor
from cluster.peer_auth import NodeCaller
from cluster.placement import place_replicas
from cluster.queue_leader import QueueLeader
from cluster.queue_replica import QueueReplica
from cluster.raft_host import RaftHost
from cluster.store_damage import Damage, open_store, stop_on_damage
from cluster.tls import raft_contexts
from cluster.transport import Transport
from queue_state.arguments import ArgumentError, parse_arguments
from raft_log.storage import NodeStore
from raft_log.types import ConfState

log = logging.getLogger(__name__)

META_GROUP = "meta"
NODE_FILE = "node.json"
SYNC_EVERY_S = 1.0
LEADER_WAIT_S = 10.0
PREFERRED_WAIT_S = 3.0
NEW_GROUP_HOLD_ELECTIONS = 2
QUEUE_CODEC_KEY = "queue_codec"


def wall_clock_ms() -> int:
    """Milliseconds since the epoch on this node's wall clock (queue leaders bound it: `LeaderClock`)."""
    return int(time.time() * 1000)


class Node:
    """One running quorumq node. The server layer provides what it asks of other nodes over HTTP: a node
    started with `--join` asks the cluster through `joiner`, and publishes to queues led by other nodes
    (dead letters) go through `remote`."""

    def __init__(
        self,
        config: NodeConfig,
        joiner: JoinRequester | None = None,
        *,
        remote: RemotePublisher | None = None,
    ) -> None:
        if not config.cluster_secret:
            raise ConfigError("a node needs a cluster secret (see cluster.cluster_secret)")
        self.config = config
        self.name = config.node
        self.store: NodeStore | None = None
        self.damage: Damage | None = None  # the latest damage found in this node's database
        self.transport = Transport(
            self.name, config.raft, config.cluster_secret, self._on_frame, tls=raft_contexts(config)
        )
        self.caller = NodeCaller.from_config(config)
        self.host: RaftHost | None = None
        self.meta = MetadataApp(self._metadata_changed)
        self._metadata_door: MetadataDoor | None = None
        self.queues: dict[str, QueueLeader] = {}
        self.queue_codec = CodecReads(QUEUE_CODEC_KEY, QUEUE_OP_VERSION)
        self.dead_letters = DeadLetterDispatcher(
            ClusterPublisher(self._led_here, self._publish_via, remote), lambda q: q in self.meta.state.queues
        )
        self._seed_peers: dict[str, Address] = {}
        self._join_url: str | None = None
        self._joiner = joiner
        self.membership: Membership | None = None
        self._tasks: list[asyncio.Task] = []
        self._reconcile_scheduled = False
        self.started_ms = wall_clock_ms()

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open storage, listen for peers and start driving the groups."""
        data_dir = Path(self.config.data_dir)
        make_directory(data_dir)
        started_before = (data_dir / NODE_FILE).exists()
        self._seed_peers = self._load_or_record_seeds(data_dir)
        if self._join_url and self._joiner is None:
            raise ConfigError("this node joins a cluster through a URL: it needs a JoinRequester")
        self.store, self.damage = open_store(data_dir, wall_clock_ms())
        self.store.on_damage = functools.partial(stop_on_damage, data_dir)
        self.transport.incarnation = self.store.incarnation
        sync_directory(data_dir)  # node.json and the database's directory keep their names after a power loss
        # A node that started before but finds a new database lost its data (or set a damaged one aside):
        # it must not bootstrap the metadata group as a voter with an empty log; it waits, unconfigured,
        # for the leader.
        lost_data = started_before and self.store.created
        if lost_data:
            log.warning("the database in %s is new although this node ran before: rejoining", data_dir)
        self.host = RaftHost(
            self.name,
            self.store,
            self.transport,
            tick_ms=self.config.tick_ms,
            election_ticks=self.config.election_ticks,
            heartbeat_ticks=self.config.heartbeat_ticks,
            snapshot_every=self.config.snapshot_every_entries,
            batch_delay_ms=self.config.batch_delay_ms,
            rng=random.Random(),
            on_control=self._on_control,
        )
        await self.transport.start()
        for name, address in self._seed_peers.items():
            self.transport.set_peer(name, address)
        seeded = self._seed_peers and not lost_data
        bootstrap = ConfState(voters=tuple(sorted(self._seed_peers))) if seeded else None
        meta_group = self.host.open_group(META_GROUP, self.meta, bootstrap)
        self._metadata_door = MetadataDoor(self.host, META_GROUP, self._metadata_members)
        self.membership = Membership(
            self, self._metadata_door, GroupChanges(self.host, self.is_up), META_GROUP
        )
        self.host.start()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._sync_loop()), loop.create_task(self._timer_loop())]
        self._tasks.append(loop.create_task(self.membership.run()))
        conf = meta_group.raft.status().conf
        if self._joiner is not None and self._join_url and not conf.voters and not conf.learners:
            joining = self.membership.cluster.join_through(self._join_url, self._joiner)
            self._tasks.append(loop.create_task(joining))

    async def stop(self) -> None:
        """Stop cleanly: timers, groups, transport, storage."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.host is not None:
            await self.host.stop()
        await self.transport.stop()
        if self.store is not None:
            self.store.commit(sync=True)
            self.store.close()

    def _load_or_record_seeds(self, data_dir: Path) -> dict[str, Address]:
        """Seeds from the first start are kept in the data dir; later flags are ignored."""
        path = data_dir / NODE_FILE
        if path.exists():
            recorded = json.loads(path.read_text())
            if recorded["node"] != self.name:
                owner = recorded["node"]
                raise SystemExit(f"data dir {data_dir} belongs to node {owner!r}, not {self.name!r}")
            self._join_url = recorded.get("join")
            return {n: Address.parse(a, what="seed") for n, a in recorded["seeds"].items()}
        if self.config.join:  # an empty metadata group that waits for the leader's snapshot and log
            self._join_url = self.config.join
            write_durably(path, json.dumps({"node": self.name, "seeds": {}, "join": self.config.join}))
            return {}
        seeds = {s.name: s.raft for s in self.config.seeds} or {self.name: self.config.raft_address}
        if self.name not in seeds:
            raise SystemExit(f"the seed list must include this node ({self.name})")
        write_durably(path, json.dumps({"node": self.name, "seeds": {n: str(a) for n, a in seeds.items()}}))
        return seeds

    # -- transport and control ------------------------------------------------------------------

    def _on_frame(self, peer: str, kind: int, body: bytes) -> None:
        if self.host is not None:
            self.host.on_frame(peer, kind, body)

    def _on_control(self, peer: str, control: dict[str, Any]) -> None:
        self.queue_codec.on_control(peer, control)
        if self._metadata_door is not None:
            self._metadata_door.on_control(peer, control)

    @property
    def metadata_door(self) -> MetadataDoor:
        """Where this node proposes metadata commands (once started)."""
        assert self._metadata_door is not None, "the node is not started"
        return self._metadata_door

    def _metadata_members(self) -> tuple[str, ...]:
        assert self.host is not None
        conf = self.host.groups[META_GROUP].raft.status().conf
        return (*conf.voters, *conf.learners)

    def is_up(self, name: str) -> bool:
        """True for this node and for peers with a live Raft connection."""
        return name == self.name or bool(self.transport.peers().get(name))

    async def _sync_loop(self) -> None:
        """Keep the metadata in step with this node: its addresses, and the arguments of queues it
        leads that were changed at runtime (through the metadata leader); tell peers which metadata
        codec and which queue operation version this node reads."""
        assert self.host is not None
        assert self.store is not None
        door = self.metadata_door
        mine = NodeInfo(
            self.name, self.config.http_url, str(self.config.raft_address), self.store.incarnation
        )
        while True:
            door.announce(self.transport.peers())
            for peer in self.transport.peers():
                self.host.send_control(peer, self.queue_codec.announcement())
            if self.meta.state.nodes.get(self.name) != mine:
                door.relay(RegisterNode(mine.name, mine.http, mine.raft, mine.incarnation))
            for name, service in list(self.queues.items()):
                info = self.meta.state.queues.get(name)
                current = service.definition()
                if service.is_leader and info is not None and info.arguments != current:
                    door.relay(SetArguments(name, info.group, current))
            await asyncio.sleep(SYNC_EVERY_S)

    async def _timer_loop(self) -> None:
        """Leader timers of every hosted queue (TTL, leases, queue expiry, consumer timeouts)."""
        while True:
            await asyncio.sleep(self.config.tick_ms / 1000)
            for service in list(self.queues.values()):
                service.on_timer()

    # -- reconciliation with the metadata -------------------------------------------------------

    def _metadata_changed(self) -> None:
        if not self._reconcile_scheduled:
            self._reconcile_scheduled = True
            asyncio.get_running_loop().call_soon(self._reconcile)

    def _reconcile(self) -> None:
        self._reconcile_scheduled = False
        assert self.host is not None and self.store is not None
        state = self.meta.state
        for peer in state.nodes.values():
            if peer.name != self.name:
                self.transport.set_peer(peer.name, Address.parse(peer.raft, what="raft"))
        wanted = {q.group: q for q in state.queues.values() if self.name in q.members}
        for name, service in list(self.queues.items()):
            if service.group not in wanted:
                del self.queues[name]
                self.host.close_group(service.group, drop=True)
        for info in wanted.values():
            if info.name not in self.queues:
                self._host_queue(info)
        if self.membership is not None:
            self.membership.metadata_changed()

    def _host_queue(self, info: QueueInfo) -> None:
        assert self.host is not None and self.store is not None
        config = parse_arguments(info.arguments)
        existing = info.group in self.store.group_ids()
        group_log = self.store.group(info.group) if existing else None
        replica = QueueReplica(info.name, info.group, config, group_log or self._new_group_log(info))
        service = QueueLeader(
            info.name,
            info.group,
            replica,
            self.host,
            LeaderClock(wall_clock_ms),
            on_dead_letter=self.dead_letters.dead_lettered,
            request_delete=self.request_delete,
            delete_sealed=self._delete_sealed,
            on_leadership=self.dead_letters.leadership_changed,
            op_version=functools.partial(self._queue_op_version, info.group),
            consumer_timeout_ms=self.config.consumer_timeout_ms,
        )
        self.queues[info.name] = service
        self.host.open_group(info.group, replica)
        if existing:
            return
        if not self.host.groups[info.group].raft.conf.voters:
            return  # waits for the leader to add it
        if info.initial_members[:1] == [self.name]:
            self.host.campaign(info.group)
        elif self.name in info.initial_members:
            # The placed leader campaigns at once, but its first votes can reach members that have
            # not created the group yet and be dropped. Holding the others' election timers for a
            # while lets its retry win, so placement (client-local, balanced) holds; if the placed
            # node is down, the others elect a leader once the hold is over.
            self.host.hold_elections(info.group, NEW_GROUP_HOLD_ELECTIONS * self.config.election_ticks)

    def _queue_op_version(self, gid: str) -> int:
        """The queue operation version this node writes into group `gid`'s log: the newest once every
        other member (voter or learner) said it reads it (`CodecReads`)."""
        assert self.host is not None
        group = self.host.groups.get(gid)
        if group is None:
            return 0
        conf = group.raft.conf
        return self.queue_codec.version_for(m for m in (*conf.voters, *conf.learners) if m != self.name)

    def _new_group_log(self, info: QueueInfo) -> Any:
        assert self.store is not None
        # An initial member bootstraps the group; a member added later starts empty and waits for the leader,
        # as does an initial member whose database is not the one the queue was declared with (wiped).
        recorded = info.initial_incarnations.get(self.name, self.store.incarnation)
        initial = info.initial_members if self.name in info.initial_members else []
        if recorded != self.store.incarnation:
            log.warning(
                "queue %s: this node's database is new since it was declared; waiting to be added", info.name
            )
            initial = []
        incarnations = tuple(sorted(info.initial_incarnations.items())) if initial else ()
        group_log = self.store.create_group(
            info.group, ConfState(voters=tuple(initial), incarnations=incarnations)
        )
        self.store.commit(sync=True)
        return group_log

    # -- what the API asks of the node ----------------------------------------------------------

    def node_http(self, name: str | None) -> str | None:
        """The HTTP base URL of a node, from the metadata."""
        info = self.meta.state.nodes.get(name) if name else None
        return info.http if info else None

    def cluster_members(self) -> list[str]:
        """Every node of the cluster: the metadata group's voters."""
        assert self.host is not None
        return list(self.host.groups[META_GROUP].raft.status().conf.voters)

    def is_cluster_node(self, name: str) -> bool:
        """True for a registered node of the metadata group, a joining learner included."""
        assert self.host is not None
        conf = self.host.groups[META_GROUP].raft.status().conf
        return name in self.meta.state.nodes and name in (*conf.voters, *conf.learners)

    def readiness(self) -> str:
        """`ok` once a metadata leader is known, this node's addresses are registered and the user
        table is initialised (before that every login is answered 503); else `no_quorum` or
        `initialising`."""
        state = self.meta.state
        if self.meta_leader() is None:
            return "no_quorum"
        return "ok" if self.name in state.nodes and state.users_initialised else "initialising"

    def damage_status(self) -> dict[str, Any] | None:
        """The latest damage found in this node's database: why, when, where the copy is kept, and whether
        this incarnation is still `repairing` (`groups_not_rebound`); None when none was found."""
        if self.damage is None:
            return None
        return {**asdict(self.damage), "repairing": bool(self.groups_not_rebound())}

    def groups_not_rebound(self) -> list[str]:
        """The groups this node belongs to (the metadata's, and those of the queues listing it) that do not
        yet hold it as a voter of its own incarnation with nothing left to repair."""
        wanted = [META_GROUP] + [q.group for q in self.meta.state.queues.values() if self.name in q.members]
        return [gid for gid in wanted if not self._rebound(gid)]

    def _rebound(self, gid: str) -> bool:
        assert self.host is not None and self.store is not None
        group = self.host.groups.get(gid)
        if group is None:
            return False
        conf = group.raft.status().conf
        mine = conf.incarnation_of(self.name) == self.store.incarnation
        return self.name in conf.voters and mine and group.raft.repair is None

    def rebinding(self, gid: str) -> dict[str, Any] | None:
        """Why this node's replica in group `gid` is a new incarnation not yet rebound, for `quorum_status`;
        None when it is rebound, or no damage was found."""
        if self.damage is None or self._rebound(gid):
            return None
        reason = f"new incarnation: database damaged ({self.damage.reason})"
        return {"reason": reason, "index": None, "through": None}

    def meta_leader(self) -> str | None:
        """The node leading the metadata group, when known."""
        assert self.host is not None
        return self.host.leader_of(META_GROUP)

    def queue_info(self, name: str) -> QueueInfo:
        """A declared queue, or QueueNotFound."""
        info = self.meta.state.queues.get(name)
        if info is None:
            raise QueueNotFound(f"no queue '{name}'")
        return info

    def queue_leader(self, name: str) -> str | None:
        """The node leading a queue's group, when known."""
        assert self.host is not None
        return self.host.leader_of(self.queue_info(name).group)

    def led_queue(self, name: str) -> QueueLeader:
        """The door (`QueueLeader`) of a queue this node leads, or NotLeader with a hint."""
        info = self.queue_info(name)
        service = self.queues.get(name)
        if service is None or service.group != info.group or not service.is_leader:
            raise NotLeader(f"this node does not lead queue '{name}'", self.queue_leader(name))
        return service

    async def declare(self, name: str, arguments: dict[str, Any], client_node: str | None) -> str:
        """Declare a queue through the metadata leader: 'created' or 'exists' (QueueConflict else)."""
        try:
            config = parse_arguments(arguments)
        except ArgumentError as exc:
            raise BadRequest(f"argument {exc.argument}: {exc.reason}") from exc
        canonical = config.to_arguments()
        state = self.meta.state
        members = place_replicas(
            self.cluster_members(),
            state.queues.values(),
            size=config.initial_group_size,
            locator=config.leader_locator,
            client_node=client_node,
        )
        reply = await self.metadata_door.declare(name, canonical, members, wall_clock_ms())
        if isinstance(reply, Conflict):
            raise QueueConflict(f"queue '{name}' exists with different arguments {reply.arguments}")
        if isinstance(reply, Refused):
            raise BadRequest(reply.reason)
        assert isinstance(reply, Created | Exists) and reply.group is not None, reply
        placed = self.meta.state.queues.get(name)
        await self._await_queue_leader(reply.group, placed.members[0] if placed and placed.members else None)
        return "created" if isinstance(reply, Created) else "exists"

    async def delete(self, name: str) -> None:
        """Delete a queue through the metadata leader."""
        info = self.queue_info(name)
        reply = await self.metadata_door.delete(name, info.group)
        if isinstance(reply, NotFound):
            raise QueueNotFound(reply.reason)

    async def _delete_sealed(self, name: str, group: str) -> None:
        """Delete a queue its leader sealed through the metadata (`QueueLeader.delete_if`), waiting until
        this node sees it gone; NotLeader when that takes too long (the leader's timer asks again)."""

        def gone() -> bool:
            info = self.meta.state.queues.get(name)
            return info is None or info.group != group

        if not await self.metadata_door.relay_until(Delete(name, group), gone):
            reason = f"queue '{name}' is sealed; the metadata did not delete it in time (retried)"
            raise NotLeader(reason, self.meta_leader())

    async def _await_queue_leader(self, group: str, preferred: str | None) -> None:
        """Wait for the new queue's preferred leader to lead it (any leader after a short while)."""
        assert self.host is not None
        started = time.monotonic()
        while time.monotonic() < started + LEADER_WAIT_S:
            leader = self.host.leader_of(group)
            if leader is not None and (leader == preferred or time.monotonic() > started + PREFERRED_WAIT_S):
                return
            await asyncio.sleep(0.02)

    def _led_here(self, name: str) -> QueueLeader | None:
        """The door of queue `name` when this node leads it, else None."""
        service = self.queues.get(name)
        return service if service is not None and service.is_leader else None

    def _publish_via(self, name: str) -> str:
        """The HTTP base URL of the node to publish to queue `name` through: its leader when known, else
        this node (which passes it on)."""
        return self.node_http(self.queue_leader(name)) or self.config.http_url

    def request_delete(self, name: str, group: str) -> None:
        """Ask the metadata leader, without waiting, to delete a queue (expired or sealed)."""
        self.metadata_door.relay(Delete(name, group))
