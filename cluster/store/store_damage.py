"""A node's damaged database: set aside at open, recorded when met at runtime, reported until repaired.

Damage the node cannot repair in place (RocksDB's `Corruption` at open or in the recovery scan, or damaged
group metadata records) moves the database to `damaged-<n>/` beside a `reason.json`, never deleting it,
and the node starts on an empty database: a new incarnation, which the leaders replace in every group
and repair by snapshot (decision 0009). Damage met at runtime writes a synced marker and stops the
process, so the next start sets the database aside instead of failing again (decision 0011).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NoReturn

from cluster.store.durable_files import sync_directory, write_durably
from raft_log.storage.database import DatabaseCorruptionError
from raft_log.storage.node_store import CorruptionError, NodeStore
from raft_log.types import StorageError

log = logging.getLogger(__name__)

DATABASE_DIR = "rocksdb"
DAMAGED_PREFIX = "damaged-"
MARKER_FILE = "damage-found.json"
REASON_FILE = "reason.json"
DAMAGED_EXIT_CODE = os.EX_TEMPFAIL
"""The exit code of a node that met damage at runtime (75: the next start sets it aside)."""


@dataclass(frozen=True)
class Damage:
    """Damage found in the node's database: why, when (ms since the epoch), and where the copy was kept."""

    reason: str
    found_ms: int
    moved_to: str


def open_store(data_dir: Path, now_ms: int) -> tuple[NodeStore, Damage | None]:
    """Open the node's database, setting it aside first when damaged; also the latest damage kept.

    The database is set aside when a runtime damage marker is present, or when opening it finds damage;
    the store returned is then a new, empty database (`NodeStore.created`)."""
    database = data_dir / DATABASE_DIR
    marker = data_dir / MARKER_FILE
    reason = _marker_reason(marker)
    if reason is None:
        try:
            return NodeStore.open(database), latest_damage(data_dir)
        except (DatabaseCorruptionError, CorruptionError) as exc:
            reason = str(exc)
    damage = _set_aside(data_dir, reason, now_ms)
    marker.unlink(missing_ok=True)
    sync_directory(data_dir)
    return NodeStore.open(database), damage


def latest_damage(data_dir: Path) -> Damage | None:
    """The damage of the newest database kept aside in `data_dir`, None when there is none."""
    kept = sorted(_kept_numbers(data_dir))
    for number in reversed(kept):
        try:
            return Damage(**json.loads((data_dir / f"{DAMAGED_PREFIX}{number}" / REASON_FILE).read_text()))
        except (OSError, ValueError, TypeError):
            continue
    return None


def stop_on_damage(data_dir: Path, error: StorageError) -> NoReturn:
    """The node's answer to damage met at runtime: the reason in a synced marker, a CRITICAL line, exit.

    The process exits at once (like a fatal consensus error), so it neither serves nor acknowledges
    anything more from the damaged database, and the next start sets the database aside instead of
    failing on it again."""
    write_durably(data_dir / MARKER_FILE, json.dumps({"reason": str(error)}))
    log.critical(
        "the database in %s is damaged (%s); exiting: the next start keeps it aside and rejoins as a new "
        "incarnation",
        data_dir,
        error,
    )
    logging.shutdown()
    os._exit(DAMAGED_EXIT_CODE)


def _marker_reason(marker: Path) -> str | None:
    try:
        text = marker.read_text()
    except FileNotFoundError:
        return None
    try:
        return str(json.loads(text)["reason"])
    except (ValueError, KeyError, TypeError):
        return "damage found at runtime (marker unreadable)"


def _kept_numbers(data_dir: Path) -> list[int]:
    return [
        int(p.name[len(DAMAGED_PREFIX) :])
        for p in data_dir.glob(f"{DAMAGED_PREFIX}*")
        if p.name[len(DAMAGED_PREFIX) :].isdigit()
    ]


def _set_aside(data_dir: Path, reason: str, now_ms: int) -> Damage:
    """Move the database to a new `damaged-<n>/` with its reason, durably (file and directories synced)."""
    kept = data_dir / f"{DAMAGED_PREFIX}{max(_kept_numbers(data_dir), default=0) + 1}"
    kept.mkdir()
    damage = Damage(reason, now_ms, str(kept))
    write_durably(kept / REASON_FILE, json.dumps(asdict(damage)))
    database = data_dir / DATABASE_DIR
    if database.exists():
        database.rename(kept / DATABASE_DIR)
    sync_directory(kept)
    sync_directory(data_dir)
    log.error(
        "the database in %s is damaged (%s): kept in %s, starting as a new incarnation with an empty "
        "database; the leaders replace this node's replicas and copy them back",
        data_dir,
        reason,
        kept,
    )
    return damage
