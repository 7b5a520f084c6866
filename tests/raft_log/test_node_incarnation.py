"""A node's incarnation (finding 7 of issue 17): created with its database, kept, new when wiped."""

from __future__ import annotations

import shutil
from pathlib import Path

from raft_log.storage import keys, records
from raft_log.storage.node_store import NodeStore
from raft_log.testing.simulated_database import SimulatedDatabase


def test_rule_a_database_keeps_its_incarnation_and_a_wiped_one_gets_a_new_one(tmp_path: Path) -> None:
    path = tmp_path / "node.db"
    store = NodeStore.open(path)
    first = store.incarnation
    store.close()
    assert len(first) == 32 and int(first, 16) >= 0
    reopened = NodeStore.open(path)
    assert reopened.incarnation == first
    reopened.close()
    shutil.rmtree(path)
    wiped = NodeStore.open(path)
    assert wiped.incarnation != first
    wiped.close()


def test_rule_the_incarnation_is_durable_once_the_store_is_open() -> None:
    db = SimulatedDatabase()
    incarnation = NodeStore.recover(db, lambda: "one").incarnation
    db.lose_power(surviving_writes=0)
    assert NodeStore.recover(db, lambda: "two").incarnation == incarnation == "one"


def test_rule_a_damaged_incarnation_record_makes_a_new_incarnation() -> None:
    db = SimulatedDatabase()
    NodeStore.recover(db, lambda: "one")
    db.rot(keys.NODE_INCARNATION)
    assert NodeStore.recover(db, lambda: "two").incarnation == "two"
    assert records.decode_incarnation(keys.NODE_INCARNATION, db.get(keys.NODE_INCARNATION) or b"") == "two"


def test_a_store_says_whether_opening_created_it() -> None:
    db = SimulatedDatabase()
    assert NodeStore.recover(db).created
    assert not NodeStore.recover(db).created
