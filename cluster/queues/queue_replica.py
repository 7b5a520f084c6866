"""One replica of a queue: the queue_state machine plus its bodies, applied entry by entry.

An entry carries a batch of operations, each in its envelope (`cluster/replication/entry_codec.py`): the time
the command is applied with, the command, and for an Enqueue its bodies, which stay in the entry
(`BodyStore`). What it applies is told to its listener, the queue's door (`ReplicaListener`): the time
applied, and on the leader each entry and its effects (deliveries, dead-letters, expiry); on followers
effects are only used to forget bodies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import msgpack

from cluster.queues import legacy_formats
from cluster.queues.bodies import BodyStore
from cluster.replication.entry_codec import (
    QUEUE_OP_VERSION,
    EntryDecodeError,
    QueueOp,
    decode_queue_op,
    entry_ops,
)
from cluster.replication.stored_message import StoredMessage
from cluster.replication.unreadable_entry import UnreadableEntry
from queue_state.arguments import QueueConfig
from queue_state.command_codec import CommandDecodeError
from queue_state.commands import Get
from queue_state.effects import Deliveries, Delivery, Enqueued, ForgetBodies, Reply
from queue_state.machine import QueueMachine
from raft_log.storage.node_store import GroupLog
from raft_log.types import Entry


class ReplicaListener(Protocol):
    """What a queue's replica tells the door on its node (`QueueDoor`): its role, the queue time it
    applies, and while this node leads, each entry applied and its operations' effects."""

    def role_changed(self, is_leader: bool) -> None:
        """This node started or stopped leading the queue's group."""
        ...

    def time_applied(self, now_ms: int) -> None:
        """An entry or a snapshot applied carried queue time `now_ms`."""
        ...

    def effects_applied(self, effects: list[Any]) -> None:
        """While leading: the effects of an operation applied."""
        ...

    def entry_applied(self) -> None:
        """While leading: every operation of an entry was applied."""
        ...


@dataclass(frozen=True)
class AutoAcked:
    """The reply to an auto-ack Get on the node that proposed it (leading still or not): deliveries with
    bodies read before they were forgotten."""

    messages: list[tuple[Delivery, StoredMessage]]


class QueueReplica:
    """The application of a queue's Raft group on one node."""

    def __init__(
        self, name: str, group: str, config: QueueConfig, group_log: GroupLog, reads: int = QUEUE_OP_VERSION
    ) -> None:
        """`reads` is the newest queue operations version this node's build reads."""
        self.name = name
        self.reads = reads
        self.group = group
        self.config = config
        self.machine = QueueMachine(name, config)
        self.bodies = BodyStore(group_log)
        self.is_leader = False
        self.listener: ReplicaListener | None = None

    def apply(self, entry: Entry, awaited: bool = False) -> list[Any]:
        """Apply every operation of a committed entry; returns their replies, with the bodies an auto-ack
        Get took when the entry is `awaited` here (its caller is answered with them). UnreadableEntry,
        with nothing applied, when one of them does not decode."""
        try:
            ops = [decode_queue_op(op, self.reads) for op in entry_ops(entry.data)]
        except (EntryDecodeError, CommandDecodeError) as exc:
            raise UnreadableEntry(f"queue {self.name}: {exc}") from exc
        if any(op.bodies is not None for op in ops):
            self.bodies.entry_applied(entry.index, entry.data)
        replies = [self._apply_op(op, entry.index, position, awaited) for position, op in enumerate(ops)]
        self._time_applied()
        if self.is_leader and self.listener is not None:
            self.listener.entry_applied()
        return replies

    def _apply_op(self, decoded: QueueOp, index: int, position: int, awaited: bool) -> Reply | AutoAcked:
        command = decoded.command
        reply: Reply | AutoAcked
        reply, effects = self.machine.apply(decoded.meta, command)
        if isinstance(reply, Enqueued) and decoded.bodies is not None and reply.ids:
            self.bodies.logged(index, position, reply.ids[0], len(reply.ids))
        if awaited and isinstance(command, Get) and command.auto_ack and isinstance(reply, Deliveries):
            reply = AutoAcked(self.bodies.with_bodies(reply.deliveries))
        if effects and self.is_leader and self.listener is not None:
            self.listener.effects_applied(effects)
        for effect in effects:
            if isinstance(effect, ForgetBodies):
                self.bodies.forget(effect.ids)
        return reply

    def snapshot_data(self) -> bytes:
        """The machine state and where in the log the bodies are (the bodies stay in this node's log)."""
        return msgpack.packb([list(self.machine.snapshot_chunks()), None, self.bodies.snapshot_state()])

    def release_log(self, index: int) -> list[int]:
        """The entries up to `index` that still hold bodies and stay stored."""
        return self.bodies.release_log(index)

    def export_snapshot(self, stored: bytes) -> bytes:
        """A stored snapshot with every body this replica holds, for a follower that is far behind.

        Bodies are taken as of now (at or after the snapshot's index); the follower keeps those the
        snapshot's machine knows and replays the log from the snapshot's index, which brings and
        forgets bodies exactly as on the leader.
        """
        chunks = msgpack.unpackb(stored, raw=False)[0]
        return msgpack.packb([chunks, list(self.bodies.exported_items())])

    def restore(self, data: bytes) -> None:
        """Install a snapshot: a local one, or one a leader exported with bodies."""
        snapshot = msgpack.unpackb(data, raw=False)
        chunks, bodies = snapshot[0], snapshot[1]
        self.machine = QueueMachine.restore(chunks)
        if bodies is not None:
            exported = ((bytes(key), bytes(value)) for key, value in bodies)
            self.bodies.replace_all(exported, below_id=self.machine.next_id)
        else:
            self.bodies.restore_state(legacy_formats.logged_bodies(snapshot))
        self._time_applied()

    def _time_applied(self) -> None:
        if self.listener is not None and self.machine.now_ms > 0:
            self.listener.time_applied(self.machine.now_ms)

    def role_changed(self, is_leader: bool) -> None:
        """Start or stop acting on effects."""
        self.is_leader = is_leader
        if self.listener is not None:
            self.listener.role_changed(is_leader)
