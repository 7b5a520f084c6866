"""A damaged database is set aside, never deleted, and the node starts on a new one (decision 0011)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cluster.store.store_damage import DAMAGED_EXIT_CODE, MARKER_FILE, latest_damage, open_store
from raft_log.storage import records
from raft_log.storage.keys import GroupKeys
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState

CONF = ConfState(voters=("n1", "n2", "n3"))

STOP_ON_DAMAGE = """
import sys
from pathlib import Path
from cluster.store.store_damage import stop_on_damage
from raft_log.storage.database import DatabaseCorruptionError
stop_on_damage(Path(sys.argv[1]), DatabaseCorruptionError("Corruption: block checksum mismatch"))
"""


def node_with_a_group(data_dir: Path) -> str:
    """A node database holding group `q1`; returns its incarnation."""
    store, damage = open_store(data_dir, now_ms=1)
    assert damage is None
    store.create_group("q1", CONF)
    store.commit()
    store.close()
    return store.incarnation


def test_an_undamaged_database_opens_as_it_is(tmp_path: Path) -> None:
    incarnation = node_with_a_group(tmp_path)
    store, damage = open_store(tmp_path, now_ms=2)
    assert damage is None and store.incarnation == incarnation and store.group_ids() == ["q1"]
    store.close()


def test_damaged_group_metadata_sets_the_database_aside_and_starts_a_new_incarnation(tmp_path: Path) -> None:
    incarnation = node_with_a_group(tmp_path)
    store = NodeStore.open(tmp_path / "rocksdb")
    conf_key = GroupKeys("q1").conf_state
    store._put(conf_key, records.seal(conf_key, b"not a membership")[:-1] + b"!")
    store.commit()
    store.close()

    store, damage = open_store(tmp_path, now_ms=5)
    assert damage is not None and "q1" in damage.reason and damage.found_ms == 5
    assert store.created and store.incarnation != incarnation and store.group_ids() == []
    store.close()
    kept = Path(damage.moved_to)
    assert kept == tmp_path / "damaged-1" and (kept / "rocksdb" / "CURRENT").exists()
    assert json.loads((kept / "reason.json").read_text())["reason"] == damage.reason
    assert latest_damage(tmp_path) == damage  # still reported after a restart


def test_damage_met_at_runtime_stops_the_node_and_its_next_start_sets_it_aside(tmp_path: Path) -> None:
    incarnation = node_with_a_group(tmp_path)
    command = [sys.executable, "-c", STOP_ON_DAMAGE, str(tmp_path)]
    child = subprocess.run(command, capture_output=True, text=True)
    assert child.returncode == DAMAGED_EXIT_CODE, child.stderr
    assert "damaged" in child.stderr and "block checksum mismatch" in child.stderr
    assert (tmp_path / MARKER_FILE).exists()

    store, damage = open_store(tmp_path, now_ms=9)
    assert damage is not None and "block checksum mismatch" in damage.reason
    assert store.incarnation != incarnation and not (tmp_path / MARKER_FILE).exists()
    store.close()
    store, again = open_store(tmp_path, now_ms=10)  # the new database is sound: nothing more is set aside
    assert again == damage and store.group_ids() == []
    store.close()
    assert sorted(p.name for p in tmp_path.glob("damaged-*")) == ["damaged-1"]
