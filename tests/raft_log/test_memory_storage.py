"""MemoryStorage: the LogStorage read side and the write side the driver uses."""

from __future__ import annotations

import pytest

from raft_log.storage.memory_storage import MemoryStorage
from raft_log.types import (
    CompactedError,
    ConfState,
    Entry,
    HardState,
    Snapshot,
    SnapshotMeta,
    UnavailableError,
)

ABC = ConfState(voters=("a", "b", "c"))


def filled(n: int = 5) -> MemoryStorage:
    storage = MemoryStorage(ABC)
    storage.append([Entry(i, 1, data=b"x" * i) for i in range(1, n + 1)])
    storage.set_hard_state(HardState(term=1, commit=n))
    return storage


def test_new_storage_is_empty_with_the_bootstrap_membership() -> None:
    storage = MemoryStorage(ABC)
    assert storage.initial_state() == (HardState(), ABC)
    assert (storage.first_index(), storage.last_index(), storage.term(0)) == (1, 0, 0)
    assert storage.snapshot().meta == SnapshotMeta(conf=ABC)


def test_append_replaces_entries_from_its_first_index() -> None:
    storage = filled()
    storage.append([Entry(3, 2), Entry(4, 2)])
    assert [storage.term(i) for i in range(1, 5)] == [1, 1, 2, 2]
    assert storage.last_index() == 4


def test_append_refuses_a_gap_or_non_contiguous_entries() -> None:
    storage = filled()
    with pytest.raises(ValueError):
        storage.append([Entry(8, 1)])
    with pytest.raises(ValueError):
        storage.append([Entry(6, 1), Entry(8, 1)])


def test_entries_stop_at_the_size_limit_but_return_at_least_one() -> None:
    storage = filled()
    assert [e.index for e in storage.entries(1, 6, max_bytes=3)] == [1, 2]
    assert [e.index for e in storage.entries(5, 6, max_bytes=0)] == [5]
    with pytest.raises(UnavailableError):
        storage.entries(1, 7)


def test_snapshot_then_compaction_keeps_the_term_of_the_compaction_point() -> None:
    storage = filled()
    snap = storage.create_snapshot(3, ABC, b"state")
    assert snap.meta == SnapshotMeta(3, 1, ABC)
    storage.compact(2)
    assert (storage.first_index(), storage.term(2)) == (3, 1)
    with pytest.raises(CompactedError):
        storage.term(1)
    with pytest.raises(CompactedError):
        storage.entries(2, 4)
    with pytest.raises(ValueError):
        storage.compact(4)  # beyond the snapshot


def test_create_snapshot_refuses_uncommitted_or_older_indexes() -> None:
    storage = filled()
    storage.set_hard_state(HardState(term=1, commit=3))
    with pytest.raises(ValueError):
        storage.create_snapshot(4, ABC, b"")
    storage.create_snapshot(3, ABC, b"")
    with pytest.raises(ValueError):
        storage.create_snapshot(2, ABC, b"")


def test_apply_snapshot_replaces_the_whole_log_and_membership() -> None:
    storage = filled()
    conf = ConfState(voters=("a", "d"))
    storage.apply_snapshot(Snapshot(SnapshotMeta(10, 3, conf), b"leader's"))
    assert (storage.first_index(), storage.last_index(), storage.term(10)) == (11, 10, 3)
    assert storage.initial_state()[1] == conf
    storage.append([Entry(11, 3)])
    assert storage.last_index() == 11
