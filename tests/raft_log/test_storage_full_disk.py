"""A write the disk refuses for want of space (`NodeStore.full_disk`), on a real RocksDB on a real small
tmpfs (root mounts it, as CI runs): the store keeps the error and takes nothing more, closes without
raising, and reopened holds what was written before and nothing of the refused batch. Any other failed
write is not a full disk."""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path

import pytest
from support.small_disk import small_disk

from raft_log.storage import database
from raft_log.storage.database import out_of_space
from raft_log.storage.node_store import NodeStore
from raft_log.testing.simulated_database import SimulatedDatabase
from raft_log.types import ConfState, StorageError

MIB = 1024 * 1024


def fill(disk: Path) -> Path:
    """Take every free byte of `disk` with one file; returns it."""
    filler = disk / "filler"
    with filler.open("wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    return filler


def test_a_write_refused_for_want_of_space_is_kept_and_the_reopened_store_lacks_it(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", 8 * MIB) as disk:
        store = NodeStore.open(disk / "db")
        group = store.create_group("g", ConfState(voters=("n1",)))
        group.app_put(b"before", b"kept")
        store.commit()
        filler = fill(disk)
        group.app_put(b"refused", b"x" * MIB)
        with pytest.raises(Exception) as refused:
            store.commit()
        assert store.failed and store.full_disk is refused.value and out_of_space(refused.value)
        with pytest.raises(StorageError):
            group.app_put(b"after", b"y")  # the store takes nothing more
        store.close()  # RocksDB refuses to flush now; the store closes all the same
        filler.unlink()
        reopened = NodeStore.open(disk / "db")
        try:
            assert reopened.group("g").app_get(b"before") == b"kept"
            assert reopened.group("g").app_get(b"refused") is None
        finally:
            reopened.close()


class FailingDatabase(SimulatedDatabase):
    """Refuses every write with `error`."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def write(self, batch: database.WriteBatch, sync: bool) -> None:
        raise self.error


@pytest.mark.parametrize(
    ("error", "full"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), True),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), True),
        (RuntimeError("IO error: No space left on device: While appending to file: 000004.log"), True),
        (OSError(errno.EIO, "Input/output error"), False),
        (RuntimeError("IO error: Input/output error"), False),
    ],
)
def test_only_a_want_of_space_counts_as_a_full_disk(error: Exception, full: bool) -> None:
    store = NodeStore(FailingDatabase(error))
    store.create_group("g", ConfState(voters=("n1",)))
    with pytest.raises(type(error)):
        store.commit()
    assert store.failed
    assert (store.full_disk is error) is full
