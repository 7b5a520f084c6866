"""The simulated disk loses exactly what a power failure would, and nothing on a process crash."""

from __future__ import annotations

from raft_log.storage.node_store import NodeStore
from raft_log.testing.simulated_database import SimulatedDatabase
from raft_log.types import ConfState, Entry, HardState


def write(db: SimulatedDatabase, key: bytes, value: bytes, sync: bool) -> None:
    batch = db.new_batch()
    batch.put(key, value)
    db.write(batch, sync)


def test_a_process_crash_keeps_unsynced_writes_and_reopening_makes_them_durable() -> None:
    db = SimulatedDatabase()
    write(db, b"a", b"1", sync=False)
    db.close()
    db.reopen()
    assert db.get(b"a") == b"1"
    db.lose_power(surviving_writes=0)  # a node acknowledges what it found at open: it must survive
    assert db.get(b"a") == b"1"


def test_power_loss_keeps_synced_writes_and_an_ordered_prefix_of_the_rest() -> None:
    db = SimulatedDatabase()
    write(db, b"a", b"1", sync=False)
    write(db, b"b", b"2", sync=True)  # makes the earlier write durable too
    write(db, b"c", b"3", sync=False)
    write(db, b"d", b"4", sync=False)
    assert db.unsynced_writes == 2
    db.lose_power(surviving_writes=1)
    assert [db.get(k) for k in (b"a", b"b", b"c", b"d")] == [b"1", b"2", b"3", None]
    assert db.unsynced_writes == 0


def test_deletes_and_ranges_are_undone_by_power_loss_when_unsynced() -> None:
    db = SimulatedDatabase()
    for key in (b"k1", b"k2", b"k3"):
        write(db, key, b"v", sync=True)
    batch = db.new_batch()
    batch.delete_range(b"k1", b"k3")
    db.write(batch, sync=False)
    assert list(db.scan(b"k", b"l")) == [(b"k3", b"v")]
    db.lose_power(surviving_writes=0)
    assert [k for k, _ in db.scan(b"k", b"l")] == [b"k1", b"k2", b"k3"]


def test_a_node_store_recovers_from_it_with_only_synced_entries() -> None:
    db = SimulatedDatabase()
    store = NodeStore.recover(db)
    group = store.create_group("g", ConfState(voters=("a",)))
    store.commit(sync=True)
    group.append([Entry(1, 1, data=b"synced")])
    group.set_hard_state(HardState(term=1, vote="a", commit=1))
    store.commit(sync=True)
    group.append([Entry(2, 1, data=b"unsynced")])
    store.commit(sync=False)
    db.lose_power(surviving_writes=0)
    recovered = NodeStore.recover(db).group("g")
    assert recovered.last_index() == 1
    assert recovered.entries(1, 2)[0].data == b"synced"
