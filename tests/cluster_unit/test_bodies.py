"""Bodies stay in the log entries that carried them, survive compaction and restarts, and leave in
snapshots for far-behind followers (real RocksDB)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest

from cluster.queues.bodies import BodyStore, body_key
from cluster.replication.stored_message import StoredMessage
from queue_state.effects import Delivery
from raft_log.storage.keys import GroupKeys
from raft_log.storage.node_store import CorruptionError, GroupLog, NodeStore
from raft_log.types import ConfState, Entry, HardState

CONF = ConfState(voters=("n1",))
GID = "q"


def message(message_id: int) -> StoredMessage:
    return StoredMessage(f"body {message_id}".encode(), {"id": message_id}, "utf8")


class Replica:
    """Just enough of a queue replica: entries whose operations carry bodies, ids handed out in order."""

    def __init__(self, store: NodeStore, log: GroupLog) -> None:
        self.store, self.log = store, log
        self.bodies = BodyStore(log)
        self.next_id = 1

    def append(self, *ops: int | None) -> int:
        """An entry with one operation per argument: n messages published, or None (no bodies)."""
        index = self.log.last_index() + 1
        wire: list[list] = []
        first_ids: list[int | None] = []
        for n in ops:
            if n is None:
                wire.append([b"cmd", None])
                first_ids.append(None)
                continue
            published = map(message, range(self.next_id, self.next_id + n))
            wire.append([b"cmd", [[m.body, m.headers, m.encoding] for m in published]])
            first_ids.append(self.next_id)
            self.next_id += n
        data = msgpack.packb(wire)
        self.log.append([Entry(index, 1, data=data)])
        self.log.set_hard_state(HardState(term=1, commit=index))
        self.bodies.entry_applied(index, data)
        for position, (op, first_id) in enumerate(zip(wire, first_ids, strict=True)):
            if first_id is not None:
                self.bodies.logged(index, position, first_id, len(op[1]))
        self.store.commit()
        return index

    def snapshot_and_compact(self, compact_to: int) -> None:
        """What the host does every so many entries: release, snapshot, compact, in one write."""
        keep = self.bodies.release_log(compact_to)
        self.log.create_snapshot(self.log.last_index(), CONF, msgpack.packb(self.bodies.snapshot_state()))
        self.log.compact(compact_to, keep)
        self.store.commit()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "node.db"


@pytest.fixture
def replica(db_path: Path) -> Iterator[Replica]:
    store = NodeStore.open(db_path)
    replica = Replica(store, store.create_group(GID, CONF))
    yield replica
    replica.store.close()


def restarted(replica: Replica, db_path: Path) -> Replica:
    """The replica after a restart: a reopened store and bodies taken up from the stored snapshot."""
    replica.store.close()
    store = NodeStore.open(db_path)
    again = Replica(store, store.group(GID))
    again.next_id = replica.next_id
    again.bodies.restore_state(msgpack.unpackb(again.log.snapshot().data, raw=False))
    return again


def stored_entries(replica: Replica) -> list[int]:
    """Indexes of the entries on disk, kept ones included."""
    group_keys = GroupKeys(GID)
    found = []
    for index in range(1, replica.log.last_index() + 1):
        try:
            replica.log.kept_entry(index)
        except CorruptionError:
            continue
        found.append(index)
    assert all(replica.store._get(group_keys.entry(i)) is not None for i in found)
    return found


def test_bodies_are_read_from_the_entries_that_carried_them(replica, db_path):
    replica.append(2, None, 3)  # ids 1-2 in operation 0, ids 3-5 in operation 2
    replica.append(None)
    replica.append(1)  # id 6
    assert replica.bodies.get_many(range(1, 7)) == [message(i) for i in range(1, 7)]
    assert replica.bodies.get(7) is None
    replica.log.set_hard_state(HardState(term=1, commit=3))
    replica.log.create_snapshot(3, CONF, msgpack.packb(replica.bodies.snapshot_state()))
    replica.store.commit()
    again = restarted(replica, db_path)  # nothing decoded in memory: read back from RocksDB
    assert again.bodies.get_many([6, 1, 4]) == [message(6), message(1), message(4)]
    assert list(again.store.group(GID).app_items(b"b")) == []  # no body was written a second time
    replica.store = again.store


def test_forgotten_bodies_read_as_missing_and_forgetting_again_changes_nothing(replica):
    replica.append(3)
    replica.bodies.forget([2])
    replica.bodies.forget([2])
    assert replica.bodies.get_many([1, 2, 3]) == [message(1), None, message(3)]
    keep = replica.bodies.release_log(1)
    assert keep == [1]  # two of three still queued


def test_compaction_keeps_half_live_entries_copies_out_sparse_ones_and_drops_empty_ones(replica, db_path):
    replica.append(4)  # 1-4: one forgotten, kept
    replica.append(4)  # 5-8: three forgotten, its last body copied out
    replica.append(2)  # 9-10: all forgotten, dropped
    replica.append(2)  # 11-12: after the compaction point
    replica.bodies.forget([1, 5, 6, 7, 9, 10])
    replica.snapshot_and_compact(3)
    assert stored_entries(replica) == [1, 4]
    assert [key for key, _ in replica.log.app_items(b"b")] == [body_key(8)]
    again = restarted(replica, db_path)
    expected = [None, message(2), message(3), message(4), None, None, None, message(8), None, None]
    assert again.bodies.get_many(range(1, 13)) == [*expected, message(11), message(12)]
    replica.store = again.store


def test_a_kept_entry_goes_once_it_turns_sparse_at_a_later_compaction(replica, db_path):
    replica.append(4)
    replica.append(1)
    replica.snapshot_and_compact(1)
    assert stored_entries(replica) == [1, 2]
    replica.bodies.forget([1, 2, 3])
    replica.append(1)
    replica.snapshot_and_compact(2)
    assert stored_entries(replica) == [2, 3]
    assert [key for key, _ in replica.log.app_items(b"b")] == [body_key(4)]
    again = restarted(replica, db_path)
    assert again.bodies.get_many(range(1, 7)) == [None, None, None, message(4), message(5), message(6)]
    replica.store = again.store


def test_an_export_carries_every_live_body_and_an_install_keeps_those_below_the_snapshot(replica, tmp_path):
    replica.append(4)
    replica.append(2)
    replica.bodies.forget([1, 2, 3])  # entry 1 turns sparse: id 4 is copied to a record of its own
    replica.snapshot_and_compact(1)
    replica.bodies.forget([5])
    exported = list(replica.bodies.exported_items())
    assert exported == [
        (body_key(i), msgpack.packb([f"body {i}".encode(), {"id": i}, "utf8"])) for i in (4, 6)
    ]
    follower_store = NodeStore.open(tmp_path / "follower.db")
    try:
        follower = Replica(follower_store, follower_store.create_group(GID, CONF))
        follower.bodies.replace_all(exported, below_id=5)  # the snapshot's machine knew ids 1-4 only
        follower_store.commit()
        assert follower.bodies.get_many([4, 6]) == [message(4), None]
    finally:
        follower_store.close()


def test_ids_that_go_backwards_are_refused(replica):
    replica.append(2)
    with pytest.raises(ValueError, match="not after"):
        replica.bodies.logged(9, 0, 1, 1)


def test_rule_ids_with_a_gap_inside_one_entry_are_refused(replica):
    replica.bodies.logged(9, 0, 1, 2)  # ids 1-2 from the entry's first operation
    with pytest.raises(ValueError, match="do not follow"):
        replica.bodies.logged(9, 2, 4, 1)  # id 3 went to an operation that logged no body


def test_a_body_read_back_is_a_view_into_the_entry_or_record_that_holds_it(replica, db_path):
    replica.append(2)  # ids 1-2
    replica.append(4)  # ids 3-6: three forgotten, so compaction copies id 6 out to a record of its own
    replica.bodies.forget([3, 4, 5])
    replica.snapshot_and_compact(2)
    again = restarted(replica, db_path)  # the entry is read back from RocksDB, the record too
    found = again.bodies.get_many([1, 6])
    assert found == [message(1), message(6)]
    assert all(isinstance(stored.body, memoryview) for stored in found if stored is not None)
    replica.store = again.store


def test_rows_pair_each_delivery_with_its_body_and_leave_out_forgotten_ones(replica):
    replica.append(1, None, 2)  # ids 1, then 2-3 two operations later
    replica.append(1)  # id 4
    replica.bodies.forget([2])
    deliveries = [Delivery(4, 2, True, 40), Delivery(1, 0, False, 10), Delivery(2, 0, False, 20)]
    deliveries.append(Delivery(3, 1, False, 30))
    rows = replica.bodies.rows(deliveries)
    assert [(r.id, r.delivery_count, r.redelivered, r.published_at_ms, r.seq) for r in rows] == [
        (4, 2, True, 40, None),
        (1, 0, False, 10, None),
        (3, 1, False, 30, None),
    ]
    assert [StoredMessage(r.body, r.headers, r.encoding) for r in rows] == [
        message(4),
        message(1),
        message(3),
    ]
