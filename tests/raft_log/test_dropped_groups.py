"""A group dropped while its id may be used again leaves a tombstone, so a node tells a group it never
held from one it dropped (an initial member that never held its queue's group bootstraps it; one that
dropped it lost its votes); a deleted queue's group, whose id never comes back, leaves none."""

from __future__ import annotations

from raft_log.storage import keys
from raft_log.storage.node_store import NodeStore
from raft_log.testing.simulated_database import SimulatedDatabase
from raft_log.types import ConfState


def test_a_dropped_group_is_remembered_across_power_loss() -> None:
    db = SimulatedDatabase()
    store = NodeStore.recover(db)
    assert store.never_held("q1")
    store.create_group("q1", ConfState(voters=("a",)))
    store.commit()
    assert not store.never_held("q1")
    store.drop_group("q1")
    store.commit()
    db.lose_power(surviving_writes=0)
    reopened = NodeStore.recover(db)
    assert reopened.group_ids() == [] and not reopened.never_held("q1") and reopened.never_held("q2")


def test_a_group_created_again_after_its_drop_keeps_its_tombstone() -> None:
    db = SimulatedDatabase()
    store = NodeStore.recover(db)
    store.create_group("q1", ConfState(voters=("a",)))
    store.commit()
    store.drop_group("q1")
    store.commit()
    store.create_group("q1", ConfState())
    store.commit()
    assert db.get(keys.dropped_key("q1")) is not None


def test_a_group_whose_id_is_never_used_again_leaves_no_tombstone() -> None:
    """A deleted queue's group: tombstones are kept for ever, so only those that may matter are written."""
    db = SimulatedDatabase()
    store = NodeStore.recover(db)
    store.create_group("q1", ConfState(voters=("a",)))
    store.commit()
    store.drop_group("q1", tombstone=False)
    store.commit()
    assert db.get(keys.dropped_key("q1")) is None and store.never_held("q1")


def test_a_database_created_before_tombstones_cannot_tell_and_says_so() -> None:
    db = SimulatedDatabase()
    first = NodeStore.recover(db)
    first.create_group("meta", ConfState(voters=("a",)))
    first.commit()
    batch = db.new_batch()
    batch.delete(keys.RECORDS_DROPS)  # as a version before tombstones left it
    db.write(batch, True)
    older = NodeStore.recover(db)
    assert not older.created and not older.never_held("q1")
