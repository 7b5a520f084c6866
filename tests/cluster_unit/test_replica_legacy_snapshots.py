"""A queue replica restores the snapshot shapes of the compatibility floor (decision 0023): a local
snapshot of `[chunks, None]`, as written before it named the log entries holding bodies, restores its
machine and names no logged bodies (`cluster/queues/legacy_formats.py`)."""

from __future__ import annotations

import msgpack

from cluster.queues.queue_replica import QueueReplica
from cluster.replication.entry_codec import EntryMeta, encode_queue_op
from cluster.replication.stored_message import StoredMessage
from queue_state.arguments import parse_arguments
from queue_state.commands import Enqueue, NewMessage
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState, Entry, EntryKind


def test_a_snapshot_written_before_it_named_logged_bodies_restores_the_machine_and_no_bodies(
    store: NodeStore,
) -> None:
    group_log = store.create_group("g", ConfState(voters=("n1",)))
    source = QueueReplica("q", "g", parse_arguments({}), group_log)
    message = StoredMessage(b"kept", {}, "utf8")
    ops = [encode_queue_op(EntryMeta(900), Enqueue((NewMessage(4),)), [message])]
    entry = Entry(1, 1, EntryKind.NORMAL, msgpack.packb(ops))
    group_log.append([entry])
    store.commit()
    source.apply(entry)
    chunks, no_export, logged = msgpack.unpackb(source.snapshot_data(), raw=False)
    assert no_export is None and logged  # today's shape names the entry holding the body

    restored = QueueReplica("q", "h", parse_arguments({}), store.create_group("h", ConfState(voters=("n1",))))
    restored.restore(msgpack.packb([chunks, None]))  # the shape before 13fd304
    assert restored.machine.stats() == source.machine.stats()
    assert restored.bodies.snapshot_state() == []
