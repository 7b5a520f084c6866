"""A quorumq node: storage, transport, the metadata group and every queue group it hosts, wired together.

Bootstrap: on the first start a node given seeds creates the metadata group with the seeds as voters
(every seed lists the same set). Later starts take membership from the data directory. Each node
registers its own addresses in the metadata; every node reconciles what it hosts with the metadata
after each change (learn peers' addresses, open new queue groups, drop deleted ones: `QueueHosting`),
destructively only once the metadata replayed what its log held at start (`MetadataReplay`).

The parts a request reaches are built at `start`: `status` (`NodeStatus`), `directory`
(`QueueDirectory`), `metadata_door` (`MetadataDoor`), `membership`; `metadata` (`MetadataView`) reads
the metadata this node applied; `peer_requests` (`PeerRequests`) carries requests to and from peers
over the transport, served by what the server layer gives it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cluster.config import Address, ConfigError, NodeConfig
from cluster.errors import Overloaded
from cluster.membership.group_changes import GroupChanges
from cluster.membership.join import JoinRequester
from cluster.membership.membership import Membership
from cluster.metadata.metadata_app import MetadataApp
from cluster.metadata.metadata_door import MetadataDoor
from cluster.metadata.metadata_replay import MetadataReplay
from cluster.metadata.metadata_view import MetadataView
from cluster.node_environment import NodeEnvironment, production_environment
from cluster.node_status import NodeStatus
from cluster.queues.allocator import IdleTrim
from cluster.queues.dead_lettering.dispatcher import DeadLetterDispatcher
from cluster.queues.dead_lettering.publisher import ClusterPublisher, RemotePublisher
from cluster.queues.dead_lettering.routes import DeadLetterRouter
from cluster.queues.leader_clock import LeaderClock
from cluster.queues.queue_directory import QueueDirectory
from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_hosting import QueueHosting
from cluster.queues.queue_replica import QueueReplica
from cluster.queues.redriving.dispatcher import RedriveDispatcher
from cluster.replication.address_exchange import AddressExchange
from cluster.replication.format_versions import FormatVersions
from cluster.replication.peer_requests import ID_BITS, PeerRequests
from cluster.replication.raft_host import RaftHost
from cluster.replication.raft_metrics import RaftMetrics
from cluster.replication.stored_message import StoredMessage
from cluster.replication.transport import KIND_REPLY, KIND_REQUEST
from cluster.resource_alarms import ResourceAlarms
from cluster.security.peer_auth import NodeCaller
from cluster.store.durable_files import make_directory, sync_directory
from cluster.store.node_record import NODE_FILE, load_or_record_seeds
from cluster.store.store_check import StoreCheck
from cluster.store.store_damage import Damage
from metadata_state.commands import Delete, RegisterNode
from metadata_state.records import NodeInfo, QueueInfo
from queue_state.effects import DeadLetter, Delivery
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState

log = logging.getLogger(__name__)

META_GROUP = "meta"
SYNC_EVERY_S = 1.0
SYNC_EVERY_QUEUE_PASSES = 10
"""The sync loop visits the queues led here that changed since its last pass (`take_changed`), and every
queue led here once in this many passes (what a pass did may not have taken: a relay lost, a proposal
refused)."""
NEW_GROUP_HOLD_ELECTIONS = 2


class Node:
    """One running quorumq node. The server layer provides what it asks of other nodes: a node started
    with `--join` asks the cluster through `joiner`, and publishes to queues led by other nodes (dead
    letters, redrives) go through what `publish_elsewhere_with` is given. `environment` is its clocks,
    randomness, database and peer links (the real ones unless a simulation passes its own:
    docs/decisions/0017)."""

    def __init__(
        self,
        config: NodeConfig,
        joiner: JoinRequester | None = None,
        *,
        environment: NodeEnvironment | None = None,
    ) -> None:
        if not config.cluster_secret:
            raise ConfigError("a node needs a cluster secret (see cluster.security.cluster_secret)")
        self.config = config
        self.name = config.node
        self.env = environment if environment is not None else production_environment()
        self.store: NodeStore | None = None
        self.transport = self.env.transport(config, self._on_frame, self._on_link_lost)
        self.peer_requests = PeerRequests(self.transport, self.env.rng.getrandbits(ID_BITS))
        self.caller = NodeCaller.from_config(config)
        self.host: RaftHost | None = None
        self.meta = MetadataApp(self._metadata_changed, self.env.reads_metadata)
        self.metadata = MetadataView(self.meta)
        data_dir = Path(config.data_dir)
        self.alarms = ResourceAlarms(
            self.name,
            lambda: self.env.read_usage(data_dir),
            config.disk_free_limit,
            config.vm_memory_high_watermark,
        )
        self._addresses = AddressExchange(
            self.name,
            lambda: self.metadata.nodes,
            self._metadata_applied,
            self._metadata_members,
            self.transport,
        )
        self._status: NodeStatus | None = None
        self._formats: FormatVersions | None = None
        self._hosting: QueueHosting | None = None
        self._directory: QueueDirectory | None = None
        self._metadata_door: MetadataDoor | None = None
        self._membership: Membership | None = None
        self._replay: MetadataReplay | None = None
        self._publisher = publisher = ClusterPublisher(self._led_here)
        router = DeadLetterRouter(lambda: self.metadata.routing_table, self._declared)
        self.dead_letters = DeadLetterDispatcher(
            publisher, router, config.dead_letter_prefetch, new_token=self.env.new_token
        )
        self.redrives = RedriveDispatcher(publisher, self._declared)
        self._join_url: str | None = None
        self.disk_full = asyncio.Event()  # the disk refused a write for want of space: the server stops it
        self._joiner = joiner
        self._tasks: list[asyncio.Task] = []
        self._reconcile_scheduled = False

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open storage, listen for peers, build the node's parts and start driving the groups."""
        data_dir = Path(self.config.data_dir)
        make_directory(data_dir)
        started_before = (data_dir / NODE_FILE).exists()
        seeds, self._join_url = load_or_record_seeds(data_dir, self.config)
        if self._join_url and self._joiner is None:
            raise ConfigError("this node joins a cluster through a URL: it needs a JoinRequester")
        opening = asyncio.get_running_loop().time()
        self.store, damage = self.env.open_store(data_dir, self.env.wall_ms())
        groups = len(self.store.group_ids())
        took = asyncio.get_running_loop().time() - opening
        log.info("opened the database (%d groups) in %.2f s", groups, took)
        self.store.on_damage = functools.partial(self.env.on_damage, data_dir)
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
            snapshot_every_bytes=self.config.snapshot_every_bytes,
            batch_delay_ms=self.config.batch_delay_ms,
            rng=random.Random(self.env.rng.getrandbits(64)),
            on_control=self._on_control,
            on_fatal=self.env.on_fatal,
            on_disk_full=self._on_disk_full,
        )
        self._build_parts(self.host, self.store, damage)
        self.alarms.check()
        await self.transport.start()
        self._addresses.know_seeds(seeds)
        for name, address in seeds.items():
            self.transport.set_peer(name, address)
        bootstrap = ConfState(voters=tuple(sorted(seeds))) if seeds and not lost_data else None
        meta_group = self.host.open_group(META_GROUP, self.meta, bootstrap)
        self._replay = MetadataReplay(meta_group, self._metadata_changed)
        self.host.start()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._sync_loop()), loop.create_task(self._timer_loop())]
        self._tasks.append(loop.create_task(self.membership.run()))
        host = self.host
        self._tasks.append(loop.create_task(IdleTrim(lambda: host.applied_data_bytes).run()))
        conf = meta_group.raft.status().conf
        # A joined node asks through its join URL when it is not a member yet, and also when the metadata
        # it opened registers no other node: it has no seeds, and the peers its join answer named were
        # known only to the process that joined, so it would refuse every peer's link and never receive
        # the metadata that names them (whole-node seed 4100379). Asking again is idempotent.
        member = bool(conf.voters or conf.learners)
        knows_no_peer = not (self.metadata.nodes.keys() - {self.name})
        if self._joiner is not None and self._join_url and (not member or knows_no_peer):
            joining = self.membership.cluster.join_through(self._join_url, self._joiner)
            self._tasks.append(loop.create_task(joining))

    def check_store(self) -> None:
        """Start reading the whole database through once (`StoreCheck`, decision 0016): called once the
        node serves, so that a restart does not wait for it."""
        self._tasks.append(asyncio.get_running_loop().create_task(self.status.store_check.run()))

    def _build_parts(self, host: RaftHost, store: NodeStore, damage: Damage | None) -> None:
        """Build the parts requests reach; `damage` is the latest found in this node's database."""
        check = StoreCheck(store.read_through)
        self._status = NodeStatus(
            self.name, META_GROUP, host, self.transport, self.metadata, store.incarnation, damage, check
        )
        hold_ticks = NEW_GROUP_HOLD_ELECTIONS * self.config.election_ticks
        reads = self.env.reads_queue_ops
        self._hosting = QueueHosting(
            self.name, store, host, self._new_queue_door, hold_ticks, reads, joined=self._join_url is not None
        )
        self._formats = FormatVersions(
            self.name, self._status.metadata_members, self.transport.linked, reads, self.env.reads_metadata
        )
        self._metadata_door = MetadataDoor(host, META_GROUP, self._formats)
        self._directory = QueueDirectory(
            self.metadata,
            self._hosting.queues,
            host,
            self._status,
            self._metadata_door,
            self.env.wall_ms,
            self.formats,
            self.config.queue_defaults(),
        )
        changes = GroupChanges(host, self._status.is_up)
        self._membership = Membership(self, self._metadata_door, changes, META_GROUP)

    def _on_disk_full(self, failure: BaseException) -> None:
        """The disk refused a write for want of space (`RaftHost.disk_full`): the Raft groups stopped, and
        the alarm says the disk; whoever runs the node stops it and starts it again when the disk has
        room."""
        self.alarms.disk_refused_write(str(failure))
        self.disk_full.set()

    @property
    def disk_full_error(self) -> BaseException | None:
        """The write the disk refused for want of space, once it did (`NodeStore.full_disk`)."""
        return self.store.full_disk if self.store is not None else None

    async def hand_over_leadership(self) -> None:
        """Before a graceful stop: have every group led here hand leadership to another member
        (`RaftHost.hand_over_leadership`), asking again each election timeout, until every group asked
        settled (`HandOver`), none could be asked, or `stop_hand_over_ms` passed."""
        host = self.host
        if host is None or host.disk_full is not None or not self.config.stop_hand_over_ms:
            return
        loop = asyncio.get_running_loop()
        tick_s = self.config.tick_ms / 1000
        began = loop.time()
        deadline = began + self.config.stop_hand_over_ms / 1000
        asked_at = -math.inf
        while loop.time() < deadline:
            if loop.time() - asked_at >= self.config.election_ticks * tick_s:
                if not host.hand_over_leadership():
                    break
                asked_at = loop.time()
            elif not host.handing_over():
                break
            await asyncio.sleep(tick_s)
        still = sum(1 for group in host.groups.values() if group.leading)
        log.info("handed leadership over in %.2f s; %d groups still led here", loop.time() - began, still)

    async def stop(self) -> None:
        """Stop cleanly: timers, groups, transport, storage (what is staged is written unless a write
        failed, when the database keeps what it had)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.peer_requests.stop()
        if self.host is not None:
            await self.host.stop()
        await self.transport.stop()
        if self.store is not None:
            if not self.store.failed:
                self.store.commit(sync=True)
            self.store.close()

    # -- the parts (once started) ---------------------------------------------------------------

    @property
    def status(self) -> NodeStatus:
        """What this node knows of itself and its cluster."""
        assert self._status is not None, "the node is not started"
        return self._status

    @property
    def raft_metrics(self) -> RaftMetrics:
        """What the node's Raft host measures (fsyncs, commit latency, snapshot sizes)."""
        assert self.host is not None, "the node is not started"
        return self.host.metrics

    @property
    def formats(self) -> FormatVersions:
        """Which version of each replicated format this node reads and writes."""
        assert self._formats is not None, "the node is not started"
        return self._formats

    @property
    def directory(self) -> QueueDirectory:
        """Where requests find, declare and delete queues."""
        assert self._directory is not None, "the node is not started"
        return self._directory

    @property
    def queues(self) -> Mapping[str, QueueDoor]:
        """The door of every queue this node hosts, by name (leading or following)."""
        assert self._hosting is not None, "the node is not started"
        return self._hosting.queues

    @property
    def led_queues(self) -> Mapping[str, QueueDoor]:
        """The door of every queue this node leads, by name."""
        assert self._hosting is not None, "the node is not started"
        return self._hosting.led

    @property
    def metadata_door(self) -> MetadataDoor:
        """Where this node proposes metadata commands."""
        assert self._metadata_door is not None, "the node is not started"
        return self._metadata_door

    @property
    def membership(self) -> Membership:
        """Queue replica sets and cluster membership."""
        assert self._membership is not None, "the node is not started"
        return self._membership

    # -- transport, control and loops -----------------------------------------------------------

    def _on_frame(self, peer: str, kind: int, body: bytes) -> None:
        if kind in (KIND_REQUEST, KIND_REPLY):
            self.peer_requests.on_frame(peer, kind, body)
        elif self.host is not None:
            self.host.on_frame(peer, kind, body)

    def _on_link_lost(self, peer: str) -> None:
        if self.host is not None:
            self.host.link_lost(peer)
        self.peer_requests.link_lost(peer)
        self.alarms.link_lost(peer)
        if self._formats is not None:
            self._formats.link_lost(peer)

    def _metadata_members(self) -> tuple[str, ...]:
        """The metadata group's voters and learners as this node knows them (none before it started)."""
        return self._status.metadata_members() if self._status is not None else ()

    def _metadata_applied(self) -> int:
        """The index of the metadata log this node applied (0 before it opened the group)."""
        group = self.host.groups.get(META_GROUP) if self.host is not None else None
        return group.applied if group is not None else 0

    def _on_control(self, peer: str, control: dict[str, Any]) -> None:
        self.peer_requests.on_control(peer, control)
        self._addresses.on_control(peer, control)
        self.alarms.on_control(peer, control)
        if self._formats is not None:
            self._formats.on_control(peer, control)
        if self._metadata_door is not None:
            self._metadata_door.on_control(peer, control)

    async def _sync_loop(self) -> None:
        """Keep the metadata in step with this node: its addresses, and the arguments of queues it
        leads that were changed at runtime (through the metadata leader); have the queues it leads apply
        their policies and run their redrive tasks (again, for a queue whose leadership it took since):
        each pass for the queues that changed since, every SYNC_EVERY_QUEUE_PASSES for all; check this
        node's resource alarms; tell peers which version of each replicated format this node reads,
        whether it serves peer requests, where the registered nodes are (`AddressExchange`) and which
        alarms it is in."""
        assert self.host is not None and self.store is not None and self._hosting is not None
        door = self.metadata_door
        mine = NodeInfo(
            self.name, self.config.http_url, str(self.config.raft_address), self.store.incarnation
        )
        passes = 0
        while True:
            passes += 1
            self.alarms.check()
            addresses = self._addresses.announcement()
            for peer in self.transport.peers():
                announced = self.formats.announcement() | self.peer_requests.announcement()
                self.host.send_control(peer, announced | addresses | self.alarms.announcement())
            registered = self.metadata.nodes.get(self.name)
            if registered is None or not registered.same_registration(mine):
                door.relay(RegisterNode(mine.name, mine.http, mine.raft, mine.incarnation))
            led = self._hosting.take_changed(every=passes % SYNC_EVERY_QUEUE_PASSES == 0)
            for command in self._hosting.changed_arguments(self.metadata.queues, led):
                door.relay(command)
            self._hosting.apply_policies(self.metadata.policy_set, self.metadata.policies_revision, led)
            self.redrives.ensure_all(led)
            await asyncio.sleep(SYNC_EVERY_S)

    async def _timer_loop(self) -> None:
        """Leader timers of every hosted queue (TTL, leases, queue expiry, consumer timeouts); the end of
        the metadata replay (an applied no-op changes no metadata, yet may end it)."""
        assert self._hosting is not None and self._replay is not None
        while True:
            await asyncio.sleep(self.config.tick_ms / 1000)
            self._hosting.on_timer(self.env.monotonic_ms())
            self._replay.over()

    # -- reconciliation with the metadata -------------------------------------------------------

    def _metadata_changed(self) -> None:
        self.metadata.changed()
        if not self._reconcile_scheduled:
            self._reconcile_scheduled = True
            asyncio.get_running_loop().call_soon(self._reconcile)

    def _reconcile(self) -> None:
        self._reconcile_scheduled = False
        assert self._hosting is not None and self._replay is not None
        for peer in self.metadata.nodes.values():
            if peer.name != self.name:
                self.transport.set_peer(peer.name, Address.parse(peer.raft, what="raft"))
        self._hosting.reconcile(self.metadata.queues, self.metadata.nodes, self._replay.over())
        self._hosting.apply_policies(self.metadata.policy_set, self.metadata.policies_revision)
        self.membership.metadata_changed()

    def _new_queue_door(self, info: QueueInfo, replica: QueueReplica) -> QueueDoor:
        """The door of a queue hosted here, with this node as its `DoorHost`."""
        assert self.host is not None
        return QueueDoor(
            info.name,
            info.group,
            replica,
            self.host,
            LeaderClock(self.env.wall_ms, self.env.monotonic_ms),
            node=self,
            formats=self.formats,
            consumer_timeout_ms=self.config.consumer_timeout_ms,
            consumer_idle_timeout_ms=self.config.consumer_idle_timeout_ms,
        )

    def _declared(self, name: str) -> bool:
        """Whether queue `name` exists, in the metadata this node applied."""
        return name in self.metadata.queues

    def _led_here(self, name: str) -> QueueDoor | None:
        """The door of queue `name` when this node leads it, else None."""
        door = self.queues.get(name)
        return door if door is not None and door.is_leader else None

    def publish_elsewhere_with(self, remote: RemotePublisher) -> None:
        """Publish dead letters and redrives to queues other nodes lead through `remote` (until then they
        wait, retried, in their source)."""
        self._publisher.remote = remote

    # -- what a queue's door asks of its node (`DoorHost`) ---------------------------------------

    def new_token(self) -> str:
        """An unguessable token (consumer tags, get holders)."""
        return self.env.new_token()

    def dead_lettered(
        self, queue: str, letter: DeadLetter, held: list[tuple[Delivery, StoredMessage]], now_ms: int
    ) -> None:
        """Publish what `queue` dead-lettered at most once (`DeadLetterDispatcher`)."""
        self.dead_letters.dead_lettered(queue, letter, held, now_ms)

    def request_delete(self, name: str, group: str) -> None:
        """Ask the metadata leader, without waiting, to delete a queue (expired or sealed)."""
        self.metadata_door.relay(Delete(name, group))

    async def delete_sealed(self, name: str, group: str) -> None:
        """Delete a sealed queue through the metadata (`QueueDirectory.delete_sealed`)."""
        await self.directory.delete_sealed(name, group)

    def leadership_changed(self, door: QueueDoor, is_leader: bool) -> None:
        """The leader's timers and the workers beside it (at-least-once dead letters, redrive tasks)
        follow a queue's leadership."""
        assert self._hosting is not None
        self._hosting.leadership_changed(door, is_leader)
        self.dead_letters.leadership_changed(door, is_leader)
        self.redrives.leadership_changed(door, is_leader)

    def queue_changed(self, door: QueueDoor) -> None:
        """While the queue is led here, run its timer again and have the sync pass visit it
        (`QueueHosting.queue_changed`)."""
        assert self._hosting is not None
        self._hosting.queue_changed(door)

    def redrive_started(self, door: QueueDoor) -> None:
        """Run the worker of the redrive task the queue started (`RedriveDispatcher.ensure`)."""
        self.redrives.ensure(door)

    def check_publish(self, queue: str, group: str) -> None:
        """Refuse a publish to `queue` (of `group`) while one of its voters or learners, as this node's
        replica knows them, is in a resource alarm (`ResourceAlarms.check_publish`), or while its group
        holds as many proposals not yet applied as this node's settings take (Overloaded)."""
        assert self.host is not None
        hosted = self.host.groups[group]
        self.alarms.check_publish((*hosted.conf.voters, *hosted.conf.learners))
        config = self.config
        if hosted.batcher.holds_at_least(config.max_unapplied_proposals, config.max_unapplied_proposal_bytes):
            raise Overloaded(queue)
