"""Drives every Raft group of a node from one asyncio loop.

One iteration (a round): turn pending operations into entries, collect the Ready of every touched
group, persist all of them with one RocksDB write and one fsync (group commit), send the messages that
had to wait for it, apply committed entries and advance. One timer ticks every group.

A slow fsync (or one of a large batch) runs in a worker thread, so the loop keeps reading sockets,
serving HTTP and stepping Raft messages meanwhile (the core allows steps between `ready` and
`advance`); a small write while fsyncs are fast is done on the loop, where it costs less than handing
it over. Rounds never overlap. A round applies at most `apply_bytes_per_round` of committed entries per
group, and the loop serves its sockets before the next round, so a long tail (a restart's replay, a
follower catching up) does not keep the node from answering requests and peers meanwhile.

Two rules shorten a publish's critical path, both from the Raft thesis (section 10.2.1):

- a leader sends its appends and heartbeats before its own fsync, unless the round changes its term
  or vote. They acknowledge nothing, and the core counts the leader itself towards a commit only once
  `advance` reports the write done, so no commit they carry covers an entry only the leader holds
  unwritten (docs/internals/raft.md, rule 3);
- a round that only moves commit indexes is written without an fsync: the commit index need not be
  durable, and RocksDB's write-ahead log recovers writes in order, so a later synced write covers it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

import msgpack

from cluster.replication.hand_over import HandOver
from cluster.replication.leader_hints import LeaderHints
from cluster.replication.peer_links import PeerLinks
from cluster.replication.peer_liveness import PeerLiveness
from cluster.replication.proposals import ProposalBatcher, ProposalFailed
from cluster.replication.raft_metrics import RaftMetrics
from cluster.replication.transport import KIND_CONTROL, KIND_RAFT
from cluster.replication.unreadable_entry import UnreadableEntry
from raft_log.confchange import ConfChange, apply_conf_change, decode_conf_change
from raft_log.core import Config, RaftNode
from raft_log.errors import MessageDecodeError, NotLeaderError, ProposalDroppedError
from raft_log.messages import Message, MessageType, decode_message, encode_message_parts
from raft_log.ready import Ready, Role
from raft_log.storage.node_store import GroupLog, NodeStore, TakenBatch
from raft_log.types import ConfState, Entry, EntryKind, Snapshot

log = logging.getLogger(__name__)

LEADER_ANNOUNCE_EVERY_TICKS = 10
BEAT = msgpack.packb({})
"""The beat each node sends every peer every heartbeat: an empty control map (`PeerLiveness`)."""
STOPPING_KEY = "stopping"
"""A control key: the node that sends it is handing leadership over to stop (`hand_over_leadership`)."""
FATAL_EXIT_CODE = 70
DEFAULT_SNAPSHOT_EVERY_BYTES = 64 << 20
SNAPSHOT_SIZE_FACTOR = 4
# What one round applies at most: a node replaying a long tail after a restart (or a follower catching up)
# does it in rounds of this size, and the loop serves requests and peers between them.
APPLY_BYTES_PER_ROUND = 2 << 20
# A synced write of at most this many bytes is done on the loop while fsyncs are fast.
INLINE_WRITE_MAX_BYTES = 256 * 1024
# What a leader may send before its own fsync: they ask followers to persist, they acknowledge nothing.
EARLY_MESSAGE_TYPES = frozenset({MessageType.APP, MessageType.HEARTBEAT})


def exit_on_fatal(what: str) -> NoReturn:
    """A consensus invariant broke: stop the process at once, like etcd's panics.

    Everything acknowledged is durable, so a supervisor restarting the node loses nothing;
    carrying on with a suspect in-memory state could.
    """
    log.critical("fatal error while %s; exiting", what, exc_info=True)
    logging.shutdown()
    os._exit(FATAL_EXIT_CODE)


class GroupApp(Protocol):
    """The application a group replicates (the metadata, or one queue)."""

    def apply(self, entry: Entry, awaited: bool = False) -> list[Any]:
        """Apply a committed NORMAL entry; one result per operation it carries. `awaited`: a caller on
        this node waits for those results (this node proposed the entry at its index and term, leader
        or not by now), so a result built only for its caller is worth building. UnreadableEntry, having
        applied nothing, when it cannot decode it: the group then halts on this node."""
        ...

    def snapshot_data(self) -> bytes:
        """The application state to store in a local snapshot."""
        ...

    def restore(self, data: bytes) -> None:
        """Replace the application state with a snapshot's data."""
        ...

    def role_changed(self, is_leader: bool) -> None:
        """Called when this node starts or stops leading the group."""
        ...

    def export_snapshot(self, stored: bytes) -> bytes:
        """What to send a follower for a stored snapshot (e.g. with message bodies added)."""
        ...

    def release_log(self, index: int) -> list[int]:
        """The log is about to be compacted up to `index`: the entries the application still reads and
        that must stay stored (`GroupLog.compact`); it moves anything else it needs out of them first."""
        ...


class _ExportingStorage:
    """The group's log as the core sees it: snapshots leave through the application's export."""

    def __init__(self, group_log: GroupLog, app: GroupApp) -> None:
        self._log = group_log
        self._app = app

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._log, name)
        if callable(value):
            setattr(self, name, value)  # a bound method: looked up here once, not on every call
        return value

    def snapshot(self) -> Snapshot:
        stored = self._log.snapshot()
        if stored.meta.index == 0:
            return stored
        return Snapshot(stored.meta, self._app.export_snapshot(stored.data))


def _has_state(snapshot: Snapshot) -> bool:
    """A received snapshot with application state; a new replica's index-0 one brings only membership."""
    return snapshot.meta.index > 0


@dataclass(frozen=True, slots=True)
class Halted:
    """Why a group stopped on this node: its application cannot read the committed entry at `index`."""

    index: int
    reason: str


@dataclass
class Group:
    """One Raft group hosted by this node."""

    gid: str
    raft: RaftNode
    log: GroupLog
    app: GroupApp
    batcher: ProposalBatcher = field(default_factory=ProposalBatcher)
    applied: int = 0
    applied_term: int = 0  # the term of the entry (or snapshot) at `applied`
    snapshot_index: int = 0
    previous_snapshot_index: int = 0
    applied_bytes: int = 0  # entry data applied since the last snapshot (or since opening)
    snapshot_bytes: int = 0  # the size of the last snapshot this process took (0 until it takes one)
    was_leader: bool = False
    led_term: int = 0  # the term this node last led the group in
    held_ticks: int = 0
    conf: ConfState = field(default_factory=ConfState)
    halted: Halted | None = None  # then the replica is still: it ticks, steps and applies nothing
    admitted_leader: tuple[int, str, str] | None = None  # (term, peer, incarnation) `_admits` let lead

    @property
    def leading(self) -> bool:
        """Whether this node leads the group (a halted replica leads nothing, whatever its core says)."""
        return self.raft.is_leader and self.halted is None


# What only a leader sends its followers.
_FROM_LEADER = frozenset(
    {
        MessageType.APP,
        MessageType.HEARTBEAT,
        MessageType.SNAP,
        MessageType.TIMEOUT_NOW,
        MessageType.READ_INDEX_RESP,
    }
)


def _log_leadership(group: Group) -> None:
    """One line when this node starts or stops leading a group, with the term and why it stopped."""
    raft, context = group.raft, {"group": group.gid, "term": group.raft.term}
    if raft.is_leader:
        log.info("group %s: leading in term %d", group.gid, raft.term, extra=context)
    elif raft.leader is not None:
        log.info(
            "group %s: stopped leading: %s leads in term %d", group.gid, raft.leader, raft.term, extra=context
        )
    else:
        why = "it lost contact with a majority" if raft.term == group.led_term else "a newer term began"
        log.warning("group %s: stopped leading in term %d: %s", group.gid, raft.term, why, extra=context)


@dataclass(frozen=True, slots=True)
class _GroupReady:
    """One group's Ready in a round, with the messages held back until the round is written."""

    group: Group
    ready: Ready
    held_back: list[Message]


@dataclass(frozen=True, slots=True)
class Round:
    """A round between `RaftHost.begin_round` and `end_round`: what to write, and whether to fsync it."""

    readies: list[_GroupReady]
    taken: TakenBatch | None
    sync: bool


class RaftHost:
    """All groups of one node: ticking, stepping, group commit, sending and applying."""

    def __init__(
        self,
        node: str,
        store: NodeStore,
        transport: PeerLinks,
        *,
        tick_ms: int,
        election_ticks: int,
        heartbeat_ticks: int,
        snapshot_every: int,
        batch_delay_ms: float,
        snapshot_every_bytes: int = DEFAULT_SNAPSHOT_EVERY_BYTES,
        apply_bytes_per_round: int = APPLY_BYTES_PER_ROUND,
        rng: random.Random,
        on_control: Callable[[str, dict[str, Any]], None] | None = None,
        inline_fsync_max_ms: float = 1.0,
        on_fatal: Callable[[str], NoReturn] = exit_on_fatal,
        on_disk_full: Callable[[BaseException], None] | None = None,
    ) -> None:
        """`on_fatal` is called, inside the handler of the exception, when stepping or processing fails;
        with `on_disk_full`, a write the disk refused for want of space (`NodeStore.full_disk`) stops the
        host instead (`disk_full`) and is handed to it."""
        self.node = node
        self.store = store
        self.transport = transport
        self.tick_ms = tick_ms
        self.election_ticks = election_ticks
        self.heartbeat_ticks = heartbeat_ticks
        self.snapshot_every = snapshot_every
        self.snapshot_every_bytes = snapshot_every_bytes
        self.apply_bytes_per_round = apply_bytes_per_round
        self.batch_delay_s = batch_delay_ms / 1000
        self.rng = rng
        self.groups: dict[str, Group] = {}
        self._on_control_hook = on_control
        self._fatal = on_fatal
        self._on_disk_full = on_disk_full
        self._dirty: set[str] = set()
        self._awake: dict[str, None] = {}  # the groups ticks visit (in order): every group not found quiet
        self._wake = asyncio.Event()
        self.inline_fsync_max_s = inline_fsync_max_ms / 1000
        self._fsync_s = 0.0  # a moving average of synced write times
        self._disk = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"fsync-{node}")
        self._tasks: list[asyncio.Task] = []
        self._ticks = 0
        self.dropped_messages = 0
        self._peer_incarnations: dict[str, str] = {}  # the incarnation each peer proved last
        # A peer unheard for longer than an election timeout and a half is silent (beats are 5x denser).
        self.liveness = PeerLiveness(election_ticks + election_ticks // 2)
        self.hints = LeaderHints(node, self._hears)
        self._led: dict[str, int] = {}  # the groups led here and their terms, as last read
        self._led_read_at: tuple[int, int] | None = None  # (leader_changes, _groups_changes) then
        self._groups_changes = 0  # groups opened or closed
        self._woken_for: dict[str, set[str]] = {}  # per silent peer, the groups it leads woken for that
        self._links_lost: set[str] = set()  # peers whose link closed, not told the whole map since
        self._stopping = False  # handing leadership over before a graceful stop
        self._hand_over = HandOver(self.groups, self._touch)
        self._peers_stopping: set[str] = set()  # peers that said so, on links still open
        self.leader_changes = 0
        self.applied_data_bytes = 0  # entry data applied by every group since this host started
        self.metrics = RaftMetrics()
        self._round_open = False  # between begin_round and the end of end_round
        self._snapshots_requested: set[str] = set()  # by an operator while a round was being written

    # -- groups ---------------------------------------------------------------------------------

    def open_group(self, gid: str, app: GroupApp, bootstrap: ConfState | None = None) -> Group:
        """Host a group: from its stored log, or created empty with `bootstrap` membership."""
        if self.store.has_group(gid):
            group_log = self.store.group(gid)
        else:
            group_log = self.store.create_group(gid, bootstrap or ConfState())
            self.store.commit(sync=True)
        snapshot = group_log.snapshot()
        if snapshot.meta.index > 0:
            app.restore(snapshot.data)
        config = Config(
            node_id=self.node,
            group=gid,
            election_tick=self.election_ticks,
            heartbeat_tick=self.heartbeat_ticks,
            applied=snapshot.meta.index,
            max_committed_size_per_ready=self.apply_bytes_per_round,
        )
        storage = _ExportingStorage(group_log, app)
        raft = RaftNode(config, storage, random.Random(self.rng.random()), group_log.repair())
        meta = snapshot.meta
        group = Group(gid, raft, group_log, app, applied=meta.index, applied_term=meta.term, conf=meta.conf)
        group.snapshot_index = group.previous_snapshot_index = snapshot.meta.index
        self.groups[gid] = group
        self._groups_changes += 1
        self._touch(gid)
        self._follow_hinted((gid,))
        return group

    def close_group(self, gid: str, *, drop: bool, tombstone: bool = True) -> None:
        """Stop hosting a group; with `drop`, delete its log and application data, leaving a tombstone
        unless told the group id will never be used again (`NodeStore.drop_group`)."""
        group = self.groups.pop(gid, None)
        self._groups_changes += 1
        if group is not None:
            group.batcher.fail(ProposalFailed(f"group {gid} closed"), in_flight=True)
            if group.was_leader:
                group.app.role_changed(False)
        if drop and self.store.has_group(gid):
            self.store.drop_group(gid, tombstone=tombstone)
            self.store.commit(sync=True)
        self._dirty.discard(gid)
        self._awake.pop(gid, None)

    def lists_member(self, gid: str, node: str) -> bool:
        """Whether the membership this node's replica of group `gid` knows committed lists `node` (as a
        voter or a learner); False for a group not hosted here."""
        group = self.groups.get(gid)
        conf = group.raft.conf if group is not None else ConfState()
        return node in conf.voters or node in conf.learners

    def is_quiet(self, gid: str) -> bool:
        """Whether group `gid` is hosted here and quiet (`RaftNode.quiesce`)."""
        group = self.groups.get(gid)
        return group is not None and group.raft.quiet

    def hold_elections(self, gid: str, ticks: int) -> None:
        """Keep a group's election timer still for `ticks` (it still answers messages meanwhile)."""
        group = self.groups.get(gid)
        if group is not None:
            group.held_ticks = ticks

    def campaign(self, gid: str) -> None:
        """Ask a group to hold an election now (used for a new queue's preferred leader)."""
        group = self.groups.get(gid)
        if group is not None and group.halted is None:
            group.raft.campaign()
            self._touch(gid)

    def leader_of(self, gid: str) -> str | None:
        """The leader this node believes a group has (local knowledge first, then peers' hints)."""
        group = self.groups.get(gid)
        if group is not None and group.halted is None:  # a halted replica knows nothing of now
            if group.raft.leader:
                return group.raft.leader
            if group.raft.role in (Role.PRE_CANDIDATE, Role.CANDIDATE):
                return None  # it heard no leader for an election timeout: hints (from leaders) are as old
        return self.hints.leader(gid)

    @property
    def disk_full(self) -> BaseException | None:
        """The write the disk refused for want of space (`NodeStore.full_disk`): once there, nothing is
        stepped, ticked, proposed or written."""
        return self.store.full_disk

    def submit(self, gid: str, op: Any) -> asyncio.Future:
        """Propose an operation through the group's batcher; fails fast when not the leader."""
        group = self.groups.get(gid)
        if group is None:
            raise ProposalFailed(f"group {gid} is not hosted here", self.leader_of(gid))
        if group.halted is not None:
            raise ProposalFailed(f"group {gid} halted here: {group.halted.reason}", self.leader_of(gid))
        if self.disk_full is not None:
            raise ProposalFailed(f"a write failed here: {self.disk_full}")
        if not group.raft.is_leader:
            raise ProposalFailed(f"not the leader of {gid}", group.raft.leader)
        future = group.batcher.submit(op)
        self._touch(gid)
        return future

    def propose_conf_change(self, gid: str, change: ConfChange) -> tuple[int, int]:
        """Propose a single-server membership change on a group led here; returns its (index, term).

        Raises ProposalFailed when not the leader, and the core's ConfChangeInProgressError,
        InvalidConfChangeError or ProposalDroppedError."""
        group = self.groups.get(gid)
        if group is None or not group.leading or self.disk_full is not None:
            raise ProposalFailed(f"not the leader of {gid}", self.leader_of(gid))
        index = group.raft.propose_conf_change(change)
        self._touch(gid)
        return index, group.raft.term

    def hand_over_leadership(self) -> int:
        """Before a graceful stop: ask every group led here to hand leadership to another voter this node
        hears and that is not stopping too (`HandOver.ask`); the number of groups asked or still settling.
        Peers are told this node is stopping (`STOPPING_KEY`): when a whole cluster stops, leadership does
        not go round."""
        if not self._stopping:
            self._stopping = True
            for peer in self.transport.peers():
                self.send_control(peer, {STOPPING_KEY: 1})
        takers = {
            peer
            for peer, up in self.transport.peers().items()
            if up and self.liveness.live(peer) and peer not in self._peers_stopping
        }
        return self._hand_over.ask(takers)

    def handing_over(self) -> bool:
        """Whether a group asked to hand leadership over has not yet settled here (`HandOver.pending`)."""
        return self._hand_over.pending()

    def transfer_leadership(self, gid: str, to: str) -> None:
        """Ask the group's leader (this node) to hand leadership to voter `to`."""
        group = self.groups.get(gid)
        if group is None or not group.leading:
            raise ProposalFailed(f"not the leader of {gid}", self.leader_of(gid))
        group.raft.transfer_leadership(to)
        self._touch(gid)

    # -- running --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the tick timer and the processing loop."""
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._tick_loop()), loop.create_task(self._process_loop())]

    async def stop(self) -> None:
        """Stop ticking and processing; fail whatever still waits."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._disk.shutdown(wait=True)
        for group in self.groups.values():
            group.batcher.fail(ProposalFailed("node stopping"), in_flight=True)

    def on_frame(self, peer: str, kind: int, body: bytes) -> None:
        """Transport callback: a Raft message to step, or a peer's leader announcement."""
        if self.liveness.heard(peer, self._ticks):
            self._rest_followers_of(peer)
        self._note_incarnation(peer)  # first: a new incarnation's groups wake, and are not reminded
        if peer in self._links_lost and self.transport.peers().get(peer):  # this node's link to it is up
            self._announce_leaders()  # it may have restarted: its groups learn their leaders now
            if not self.hints.owes_whole(peer):
                self._links_lost.discard(peer)
                self._remind_quiet(peer)
        if kind == KIND_RAFT:
            try:
                message = decode_message(body)
            except MessageDecodeError as exc:
                log.warning("dropping undecodable raft message from %s: %s", peer, exc)
                return
            group = self.groups.get(message.group)
            halted = group is not None and group.halted is not None  # a halted replica steps nothing
            if (
                self.disk_full is not None
                or group is None
                or halted
                or message.frm != peer
                or not self._admits(group, peer, message)
            ):
                self.dropped_messages += 1
                return
            try:
                group.raft.step(message)
            except Exception:
                self._fatal(f"stepping a message of group {message.group} from {peer}")
            self._touch(message.group)
        elif kind == KIND_CONTROL:
            self._on_control(peer, body)

    def _note_incarnation(self, peer: str) -> None:
        """When `peer` proves another incarnation than before, the groups this node leads forget what it
        matched (a new database holds nothing), so they probe it from the start."""
        proved = self.transport.peer_incarnation(peer)
        known = self._peer_incarnations.setdefault(peer, proved)
        if known == proved:
            return
        self._peer_incarnations[peer] = proved
        if known:
            log.warning("peer %s is a new incarnation (was %s): its replicas start over", peer, known)
            self._woken_for.pop(peer, None)  # its groups' leader, if it led any, is not coming back
            self.wake_shared(peer)
            for gid, group in self.groups.items():
                if group.halted is None and group.raft.peer_lost_log(peer):
                    self._touch(gid)

    def _admits(self, group: Group, peer: str, message: Message) -> bool:
        """Whether `group` steps `message` from `peer`: always when `peer` proved the incarnation the
        group's configuration records for it (`_same_incarnation`). Otherwise only what a leader sends,
        from a term newer than this replica's, or from its own term while it knows no leader of it, and
        then for the rest of that term: a new incarnation leads only when voters that record it elected
        it (they drop the votes of any other), so a term has one such leader, while this replica's
        configuration may be older than the one that replaced the member (a lagging replica, or a leader's
        snapshot taken before the replacement), and would otherwise never let it catch up. The leader a
        replica stepped for its term is remembered whichever way it was admitted: a snapshot from it can
        install a configuration that records its member's old incarnation (whole-node seed 200441)."""
        proved = (message.term, peer, self.transport.peer_incarnation(peer))
        is_leader_message = message.type in _FROM_LEADER
        if self._same_incarnation(group, peer):
            if is_leader_message and message.term >= group.raft.term:
                group.admitted_leader = proved
            return True
        if not is_leader_message:
            return False
        raft = group.raft
        if message.term > raft.term or (message.term == raft.term and raft.leader is None):
            group.admitted_leader = proved
        return group.admitted_leader == proved

    def _same_incarnation(self, group: Group, peer: str) -> bool:
        """Whether `peer` proved the incarnation `group`'s configuration records for it (or none is
        recorded, or it proved none: a version before incarnations). A wiped node's replica is not the
        member the configuration names: its votes and acknowledgements must not count."""
        recorded = group.raft.conf.incarnation_of(peer)
        proved = self.transport.peer_incarnation(peer)
        return recorded is None or not proved or recorded == proved

    def _on_control(self, peer: str, body: bytes) -> None:
        try:
            control = msgpack.unpackb(body, raw=False)
            if not isinstance(control, dict):
                raise TypeError("control frame is not a map")
            announced = self.hints.learn(peer, control)
            if control.pop(STOPPING_KEY, None):
                self._peers_stopping.add(peer)
        except (ValueError, KeyError, TypeError, msgpack.UnpackException) as exc:
            log.warning("dropping malformed control frame from %s: %s", peer, exc)
            return
        self._follow_hinted(announced)
        if control and self._on_control_hook is not None:
            self._on_control_hook(peer, control)

    def send_control(self, peer: str, control: dict[str, Any]) -> bool:
        """Send a small control map (not a Raft message) to a peer."""
        return self.transport.send(peer, "", KIND_CONTROL, msgpack.packb(control))

    def has_work(self) -> bool:
        """Whether a group was touched since the last round began (the next one has something to do)."""
        return bool(self._dirty)

    def _touch(self, gid: str) -> None:
        """An input reached group `gid` (which may have woken it): the next round has work, the ticks
        visit it again."""
        self._dirty.add(gid)
        self._awake[gid] = None
        self._wake.set()

    async def _tick_loop(self) -> None:
        interval = self.tick_ms / 1000
        while True:
            await asyncio.sleep(interval)
            self.tick()

    def tick(self) -> None:
        """One tick of every awake group's clock; a leader with nothing in flight quiesces its group.
        Every heartbeat, a beat to each peer; every few, a leader announcement."""
        if self.disk_full is not None:
            return
        self._ticks += 1
        peers = self.transport.peers()
        for peer in self.liveness.fell_silent(peers, self._ticks):
            log.info("peer %s is silent: waking the groups this node shares with it", peer)
            self.wake_shared(peer, silent=True)
        for gid in list(self._awake):
            group = self.groups.get(gid)
            if group is None or group.halted is not None or group.raft.quiet:
                del self._awake[gid]
                continue
            if group.held_ticks and not group.raft.is_leader:
                group.held_ticks -= 1
                continue
            group.raft.tick()
            if self._may_quiesce(group):
                group.raft.quiesce()
            self._dirty.add(gid)
        if self._ticks % self.heartbeat_ticks == 0:
            for peer in peers:
                self.transport.send(peer, "", KIND_CONTROL, BEAT)
        if self._ticks % LEADER_ANNOUNCE_EVERY_TICKS == 0:
            self._announce_leaders()
        self._wake.set()

    def _may_quiesce(self, group: Group) -> bool:
        """Whether `group`'s leader may go quiet: its core has nothing in flight, nothing waits to be
        proposed or applied here, and this node hears every other member (`PeerLiveness`)."""
        raft = group.raft
        return (
            raft.can_quiesce()
            and not raft.conf.learners  # a learner waits for its promotion, which the group's upkeep does
            and not group.batcher.has_pending()
            and not group.batcher.in_flight
            and all(
                self.liveness.live(node)
                for node in (*raft.conf.voters, *raft.conf.learners)
                if node != self.node
            )
        )

    def link_lost(self, peer: str) -> None:
        """`peer`'s link closed: it may be restarting, so the quiet groups it leads must not wait on it
        (`wake_shared`), nor go quiet again should it be heard (a restarted process leads nothing: only a
        paused one keeps its links), and it is told which groups this node leads afresh (`LeaderHints`)."""
        self._woken_for.pop(peer, None)
        self.wake_shared(peer)
        self.hints.link_lost(peer)
        self._links_lost.add(peer)
        self._peers_stopping.discard(peer)  # whatever comes back on a new link is a process that started

    def wake_shared(self, peer: str, *, silent: bool = False) -> None:
        """`peer` went `silent`, lost its link or came back as a new incarnation: wake the quiet groups it
        leads, which must elect another leader should it be gone, and those this node leads that no longer
        hear a majority, which must step down. The others keep still: their leader is heard, and waking
        thousands of groups at once would only load the nodes it spares. Those woken for a silent leader
        may go quiet again once it is heard (`_rest_followers_of`)."""
        woken = []
        for group in self.groups.values():
            raft = group.raft
            if raft.quiet and (raft.leader == peer or (raft.is_leader and not self._hears_majority(raft))):
                raft.wake()
                self._awake[group.gid] = None
                if silent and raft.leader == peer:
                    woken.append(group.gid)
        if woken:
            self._woken_for.setdefault(peer, set()).update(woken)

    def _rest_followers_of(self, peer: str) -> None:
        """`peer` is heard again after it fell silent: the groups it leads that `wake_shared` woke here
        and that took no message since go quiet again (`RaftNode.rest`). Else a pause of the peer's
        process, longer than the silence takes but shorter than an election, would have every group it
        leads elect another leader: it stays quiet as their leader, so woken followers hear nothing."""
        for gid in self._woken_for.pop(peer, ()):
            group = self.groups.get(gid)
            if group is not None and group.halted is None and group.raft.leader == peer:
                group.raft.rest()

    def _remind_quiet(self, peer: str) -> None:
        """`peer` is back after its link closed: each quiet group led here that it is a member of sends it
        the quiescing heartbeat again (`RaftNode.remind`), which brings its replica the leader and the
        commit index, and leaves the group quiet."""
        for gid, group in self.groups.items():
            if group.halted is None and group.raft.quiet and group.raft.remind(peer):
                self._touch(gid)

    def _follow_hinted(self, gids: Iterable[str]) -> None:
        """The groups of `gids` hosted here that know no leader of their term follow the one a heard peer
        announced for that very term, and go quiet (`RaftNode.follow_quietly`): a restarted node's
        replicas would otherwise each stand for election after a timeout, and wake their quiet leaders."""
        for gid in gids:
            group = self.groups.get(gid)
            hint = self.hints.hint(gid) if group is not None and group.halted is None else None
            if (
                group is not None
                and hint is not None
                and self._same_incarnation(group, hint[0])  # else `_admits` would drop what it sends
                and group.raft.follow_quietly(*hint)
            ):
                self._touch(gid)

    def _hears(self, peer: str) -> bool:
        """Whether `peer` is a peer still (not forgotten) that this node hears (`PeerLiveness`)."""
        return peer in self.transport.peers() and self.liveness.live(peer)

    def _hears_majority(self, raft: RaftNode) -> bool:
        """Whether this node hears a majority of the group's voters (itself included)."""
        voters = raft.conf.voters
        heard = sum(1 for voter in voters if voter == self.node or self.liveness.live(voter))
        return 2 * heard > len(voters)

    def _announce_leaders(self) -> None:
        """Tell the peers which groups this node leads (`LeaderHints`), read again from the groups only
        once leadership here changed (a halted replica steps down too) or groups came or went."""
        key = (self.leader_changes, self._groups_changes)
        if key != self._led_read_at:
            self._led = {gid: g.raft.term for gid, g in self.groups.items() if g.leading}
            self._led_read_at = key
        self.hints.announce(self._led, self.transport.peers(), self.send_control)

    async def _process_loop(self) -> None:
        while True:
            await self._wake.wait()
            if self.batch_delay_s > 0 and any(
                self.groups[g].batcher.has_pending() for g in self._dirty if g in self.groups
            ):
                await asyncio.sleep(self.batch_delay_s)
            self._wake.clear()
            try:
                await self.process_once()
            except Exception:
                if self._on_disk_full is None or self.store.full_disk is None:
                    self._fatal("processing ready groups")
                self._stop_on_full_disk(self.store.full_disk)
                return
            if self._wake.is_set():
                # More work is waiting (a long tail to apply): let the loop serve its sockets first, as
                # `wait()` on a set event would go on without yielding.
                await asyncio.sleep(0)

    def _stop_on_full_disk(self, failure: BaseException) -> None:
        """The disk refused a round's write: nothing of that round was acknowledged, voted or sent but a
        leader's appends, which ask followers to persist and acknowledge nothing. The in-memory cores
        are ahead of the disk, so the host steps, ticks and writes nothing more; only a reopen of the
        store, as a restart does, is truthful (docs/internals/raft.md, "A write the disk refuses")."""
        log.error("a write failed (%s): this node's Raft groups stop until it restarts", failure)
        for group in self.groups.values():
            group.batcher.fail(ProposalFailed(f"a write failed here: {failure}"), in_flight=True)
            self._step_down(group)  # its door and workers (dead letters, redrives) stop serving
        assert self._on_disk_full is not None
        self._on_disk_full(failure)

    async def process_once(self) -> None:
        """One group-commit round over every group touched since the last one."""
        round_ = self.begin_round()
        if round_ is None:
            return
        taken = round_.taken
        if taken is not None:
            if round_.sync and self._write_in_thread(taken):
                loop = asyncio.get_running_loop()
                # Shielded: a stop cancelling this round must not cancel the write still queued for the
                # thread, as the store writes every batch it handed out, in order, before it closes.
                writing = loop.run_in_executor(self._disk, self._timed_write, taken, True)
                took = await asyncio.shield(writing)
            else:
                took = self._timed_write(taken, round_.sync)
            if round_.sync:
                self._fsync_s += (took - self._fsync_s) / 8
                self.metrics.fsync_seconds.observe(took)
            self.store.finish(taken)
        self.end_round(round_)

    def begin_round(self) -> Round | None:
        """The first half of a round: take every touched group's Ready, stage it, send what may leave
        before the write, and take the staged batch. The caller writes `taken` (synced when `sync`),
        calls `store.finish`, then `end_round`; no round may begin before that."""
        dirty, self._dirty = self._dirty, set()
        readies: list[_GroupReady] = []
        sync = False
        for gid in dirty:
            group = self.groups.get(gid)
            if group is None or group.halted is not None:
                continue
            self._flush_proposals(group)
            if group.raft.has_ready():
                ready = group.raft.ready()
                keeps_vote = self._keeps_term_and_vote(group, ready)
                sync |= not keeps_vote or self._persists_log(ready)
                self._stage(group, ready)
                readies.append(_GroupReady(group, ready, self._send_early(group, ready, keeps_vote)))
        if not readies:
            return None
        self._round_open = True
        return Round(readies, self.store.take(), sync)

    def end_round(self, round_: Round) -> None:
        """The second half of a round, once its batch is written: send, apply and advance; then the
        snapshots an operator asked for meanwhile (`checkpoint`)."""
        try:
            self._end_round(round_)
        finally:
            self._round_open = False

    def _end_round(self, round_: Round) -> None:
        # A group closed while the round was being written is gone: nothing of it is sent or applied.
        readies = [r for r in round_.readies if self.groups.get(r.group.gid) is r.group]
        for r in readies:
            self._send(r.group, r.held_back)
        for r in readies:
            self._apply(r.group, r.ready)
            r.group.raft.advance(r.ready)
            if r.group.raft.repair is None:
                r.group.log.finish_repair()  # the entries that repaired it are written: stage the end
            if r.group.raft.has_ready() or r.group.batcher.has_pending():
                self._touch(r.group.gid)
        requested, self._snapshots_requested = self._snapshots_requested, set()
        for gid in requested:
            if (group := self.groups.get(gid)) is not None:
                self._snapshot_if_new(group)
        self.store.commit(sync=False)

    def checkpoint(self, gid: str) -> bool:
        """Take a snapshot of group `gid` now (an operator's force_checkpoint), or at the end of the round
        being written (True: requested). KeyError for a group not hosted here."""
        group = self.groups[gid]
        if self._round_open:
            self._snapshots_requested.add(gid)
            return True
        self._snapshot_if_new(group)
        self.store.commit(sync=False)
        return False

    def _snapshot_if_new(self, group: Group) -> None:
        if group.applied > group.snapshot_index:
            self._snapshot(group)

    def _write_in_thread(self, taken: TakenBatch) -> bool:
        """A synced write goes to the worker thread when fsyncs have been slow or the batch is large;
        otherwise handing it over (a thread wake-up each way, the GIL back and forth) costs more
        than the loop waits for it."""
        return (
            self._fsync_s >= self.inline_fsync_max_s or taken.batch.size_in_bytes() > INLINE_WRITE_MAX_BYTES
        )

    def _timed_write(self, taken: TakenBatch, sync: bool) -> float:
        started = time.perf_counter()
        self.store.write_taken(taken, sync)
        return time.perf_counter() - started

    def _send(self, group: Group, messages: list[Message] | tuple[Message, ...]) -> None:
        for message in messages:
            if not self.transport.send(message.to, group.gid, KIND_RAFT, *encode_message_parts(message)):
                self.dropped_messages += 1

    @staticmethod
    def _keeps_term_and_vote(group: Group, ready: Ready) -> bool:
        """Whether the Ready (not yet staged) leaves the group's persisted term and vote as they are."""
        if ready.hard_state is None:
            return True
        persisted = group.log.initial_state()[0]
        return (ready.hard_state.term, ready.hard_state.vote) == (persisted.term, persisted.vote)

    @staticmethod
    def _persists_log(ready: Ready) -> bool:
        """Whether the Ready brings entries, a snapshot or membership: they must be synced."""
        return bool(ready.entries) or ready.snapshot is not None or ready.conf_state is not None

    def _send_early(self, group: Group, ready: Ready, keeps_vote: bool) -> list[Message]:
        """A leader whose round keeps its term and vote sends its appends and heartbeats now;
        returns the messages that must wait until the round is durable."""
        if not keeps_vote or not group.raft.is_leader or ready.snapshot is not None:
            return list(ready.messages)
        self._send(group, [m for m in ready.messages if m.type in EARLY_MESSAGE_TYPES])
        return [m for m in ready.messages if m.type not in EARLY_MESSAGE_TYPES]

    def _flush_proposals(self, group: Group) -> None:
        """Propose every pending operation, in as many entries as `ProposalBatcher.take` makes of them."""
        while group.batcher.has_pending():
            data, futures = group.batcher.take()
            try:
                index = group.raft.propose(data)
            except NotLeaderError as exc:
                leader = getattr(exc, "leader_hint", None)
                group.batcher.refuse(futures, ProposalFailed(f"not the leader of {group.gid}", leader))
                continue
            except ProposalDroppedError:
                group.batcher.refuse(futures, ProposalFailed(f"leadership of {group.gid} is moving"))
                continue
            group.batcher.proposed(index, group.raft.term, futures)

    @staticmethod
    def _stage(group: Group, ready: Ready) -> None:
        if ready.snapshot is not None:
            group.log.apply_snapshot(ready.snapshot)
        if ready.entries:
            group.log.append(ready.entries)
        if ready.hard_state is not None:
            group.log.set_hard_state(ready.hard_state)
        if ready.conf_state is not None:
            group.log.set_conf_state(ready.conf_state)

    def _apply(self, group: Group, ready: Ready) -> None:
        if ready.snapshot is not None:
            if _has_state(ready.snapshot):
                group.app.restore(ready.snapshot.data)
            group.applied = group.snapshot_index = ready.snapshot.meta.index
            group.applied_term = ready.snapshot.meta.term
            group.previous_snapshot_index = group.snapshot_index
            group.conf = ready.snapshot.meta.conf
            # an installed snapshot carries the leader's bodies: its size says nothing of local snapshots
            group.snapshot_bytes, group.applied_bytes = 0, 0
        for entry in ready.committed_entries:
            results: list[Any] = []
            if entry.kind == EntryKind.NORMAL and entry.data:
                try:
                    results = group.app.apply(entry, group.batcher.awaits(entry.index, entry.term))
                except UnreadableEntry as exc:
                    self._halt(group, entry.index, str(exc))
                    return
            elif entry.kind == EntryKind.CONF_CHANGE:
                group.conf = apply_conf_change(group.conf, decode_conf_change(entry.data))
            took = group.batcher.applied(entry.index, entry.term, results)
            if took is not None:
                self.metrics.commit_seconds.observe(took)
            group.applied, group.applied_term = entry.index, entry.term
            group.applied_bytes += len(entry.data)
            self.applied_data_bytes += len(entry.data)
        is_leader = group.raft.is_leader
        if ready.snapshot is not None or ready.entries:  # the log may have lost entries still awaited
            held_term = group.raft.term if is_leader else None
            group.batcher.forget_replaced(group.raft.entry_term, held_term, group.raft.leader)
        if is_leader != group.was_leader:
            group.was_leader = is_leader
            self.leader_changes += 1
            _log_leadership(group)
            if not is_leader:
                group.batcher.fail(
                    ProposalFailed("lost leadership", group.raft.leader),
                    in_flight=self._stepped_down_alone(group),
                )
            group.app.role_changed(is_leader)
        if is_leader:
            group.led_term = group.raft.term
        if self._snapshot_due(group):
            self._snapshot(group)

    def _halt(self, group: Group, index: int, reason: str) -> None:
        """Stop `group` on this node at the committed entry `index` its application cannot read.

        Applying what follows would part this replica from the others, so it applies nothing more; it
        also ticks, steps, acknowledges and votes for nothing (a leader that cannot apply would accept
        proposals it never answers), so the others go on without it, and elect another leader if it
        led. What it awaited may still commit: answered outcome unknown. Nothing of this is written: a
        restart replays the log and halts at the same entry, unless the node now runs a version that
        reads it."""
        group.halted = Halted(index, reason)
        log.error(
            "group %s: halted at index %d: this node cannot read the entry (%s); it applies, acknowledges "
            "and votes for nothing of the group until it runs a version that reads it",
            group.gid,
            index,
            reason,
            extra={"group": group.gid, "index": index},
        )
        group.batcher.fail(
            ProposalFailed(f"group {group.gid} halted on {self.node}: {reason}"), in_flight=True
        )
        self._step_down(group)

    def _step_down(self, group: Group) -> None:
        """The replica here no longer serves as the group's leader (whatever its core still thinks)."""
        if group.was_leader:
            group.was_leader = False
            self.leader_changes += 1
            group.app.role_changed(False)

    def _snapshot_due(self, group: Group) -> bool:
        """After `snapshot_every` entries, or once the entry data applied since the last snapshot is
        `snapshot_every_bytes` and SNAPSHOT_SIZE_FACTOR times that snapshot's size: a restart then
        replays (and verifies) a bounded tail, and snapshots of a long queue cost at most 1/factor of
        the data they replace."""
        if group.applied - group.snapshot_index >= self.snapshot_every:
            return True
        threshold = max(self.snapshot_every_bytes, SNAPSHOT_SIZE_FACTOR * group.snapshot_bytes)
        return group.applied_bytes >= threshold

    @staticmethod
    def _stepped_down_alone(group: Group) -> bool:
        """A leader that stepped down in its own term with no successor known (CheckQuorum: it heard
        from no majority). Its entries still awaited cannot commit until it hears from a leader again, so
        their callers are answered now (503 `outcome_unknown`: a deduplicated retry elsewhere is safe)
        rather than when the fault heals. After a newer term, the new leader's appends settle them
        soon: applied with their results, failed as overwritten once another entry is applied at their
        index, or (outcome unknown) once a snapshot covers them or the new leader's entries replace
        them here (`ProposalBatcher.forget_replaced`)."""
        return group.raft.leader is None and group.raft.term == group.led_term

    def _snapshot(self, group: Group) -> None:
        """A local snapshot at the applied index, with the membership in force there."""
        if group.previous_snapshot_index > 0:  # the previous snapshot allows it; the same write holds both
            previous = group.previous_snapshot_index
            group.log.compact(previous, group.app.release_log(previous))
        data = group.app.snapshot_data()
        group.log.create_snapshot(group.applied, group.conf, data)
        group.previous_snapshot_index = group.snapshot_index
        group.snapshot_index = group.applied
        group.snapshot_bytes, group.applied_bytes = len(data), 0
        self.metrics.snapshot_bytes.observe(len(data))
