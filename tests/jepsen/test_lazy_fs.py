"""The lazy filesystem bites through a real FUSE mount: real syscalls, a real daemon, real RocksDB.

What is written but not fsynced (data, names, renames) is gone after a discard; what was synced
(including O_SYNC and O_DIRECT writes) is intact; nothing stale is read back from the kernel's caches.
Needs root and /dev/fuse (skipped, with the reason, elsewhere).
"""

from __future__ import annotations

import errno
import mmap
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.store.durable_files import sync_directory
from jepsen_tests.lazy_mount import LazyMount, is_mounted, unavailable_reason

pytestmark = pytest.mark.faults

ROCKSDB_WRITER = """
import os, sys, time
from raft_log.storage.rocksdb_database import RocksDatabase
root, count = sys.argv[1], int(sys.argv[2])
db = RocksDatabase.open(os.path.join(root, "db"))
fd = os.open(root, os.O_RDONLY)  # RocksDB syncs its own directory, not the one it was created in
os.fsync(fd)
os.close(fd)
for i in range(count):
    batch = db.new_batch()
    batch.put(b"synced-%d" % i, b"v" * 200)
    db.write(batch, sync=True)
for i in range(count):
    batch = db.new_batch()
    batch.put(b"unsynced-%d" % i, b"v" * 200)
    db.write(batch, sync=False)
print("written", flush=True)
time.sleep(600)
"""


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[LazyMount]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    lazy = LazyMount(tmp_path / "mnt", tmp_path / "store", tmp_path / "lazyfs.log")
    lazy.start()
    try:
        yield lazy
    finally:
        lazy.stop()
    assert not is_mounted(lazy.mountpoint)


def write(path: Path, data: bytes, *, sync: bool, flags: int = 0) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flags, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_unsynced_data_is_gone_after_a_discard_and_synced_data_intact(mount: LazyMount) -> None:
    root = mount.mountpoint
    write(root / "synced", b"kept", sync=True)
    write(root / "unsynced", b"lost" * 1000, sync=False)
    sync_directory(root)
    assert mount.stats()["dirty_bytes"] == 4000
    lost = mount.discard()
    assert (lost["dirty_bytes"], lost["unsynced_files"]) == (4000, 1)
    assert (root / "synced").read_bytes() == b"kept"
    assert (root / "unsynced").read_bytes() == b""  # its name was synced, its data was not
    assert mount.stats()["dirty_bytes"] == 0


def test_a_synced_file_whose_directory_was_not_synced_is_gone(mount: LazyMount) -> None:
    root = mount.mountpoint
    (root / "dir").mkdir()
    sync_directory(root)
    write(root / "dir" / "file", b"content synced, name not", sync=True)
    assert mount.discard()["unsynced_entries"] == 1
    assert list((root / "dir").iterdir()) == []


def test_an_unsynced_rename_reverts(mount: LazyMount) -> None:
    root = mount.mountpoint
    write(root / "CURRENT", b"old", sync=True)
    write(root / "CURRENT.tmp", b"new", sync=True)
    sync_directory(root)
    os.rename(root / "CURRENT.tmp", root / "CURRENT")
    assert (root / "CURRENT").read_bytes() == b"new"
    mount.discard()
    assert sorted(p.name for p in root.iterdir()) == ["CURRENT", "CURRENT.tmp"]
    assert (root / "CURRENT").read_bytes() == b"old"
    os.rename(root / "CURRENT.tmp", root / "CURRENT")
    sync_directory(root)
    mount.discard()
    assert (root / "CURRENT").read_bytes() == b"new"


@pytest.mark.parametrize("flag", ["O_SYNC", "O_DIRECT"])
def test_a_write_through_an_o_sync_or_o_direct_handle_survives(mount: LazyMount, flag: str) -> None:
    root = mount.mountpoint
    write(root / "log", b"", sync=True)
    sync_directory(root)
    page = mmap.mmap(-1, 4096)  # aligned, as O_DIRECT may require
    page.write(b"r" * 4096)
    fd = os.open(root / "log", os.O_WRONLY | getattr(os, flag))
    try:
        os.write(fd, page)
    finally:
        os.close(fd)
    mount.discard()
    assert (root / "log").read_bytes() == b"r" * 4096


def test_nothing_stale_is_read_from_kernel_caches_after_a_discard(mount: LazyMount) -> None:
    root = mount.mountpoint
    write(root / "f", b"durable", sync=True)
    sync_directory(root)
    with (root / "f").open("r+b") as file:
        file.write(b"volatile and longer")
        file.flush()
        file.seek(0)
        assert file.read() == b"volatile and longer"  # now in the page cache
    (root / "gone").mkdir()
    assert (root / "gone").is_dir()  # and in the dentry cache
    mount.discard()
    assert (root / "f").stat().st_size == len(b"durable")
    assert (root / "f").read_bytes() == b"durable"
    assert not (root / "gone").exists()


def test_rocksdb_keeps_synced_writes_and_loses_unsynced_ones(mount: LazyMount) -> None:
    root = mount.mountpoint
    writer = subprocess.Popen(
        [sys.executable, "-c", ROCKSDB_WRITER, str(root), "200"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
    finally:
        writer.send_signal(signal.SIGKILL)  # a crash: RocksDB is not closed
        writer.wait()
    assert mount.discard()["dirty_bytes"] > 200 * 200
    reader = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from raft_log.storage.rocksdb_database import RocksDatabase as R; "
            "d = R.open(sys.argv[1]); "
            "print(sum(d.get(b'synced-%d' % i) is not None for i in range(200)), "
            "sum(d.get(b'unsynced-%d' % i) is not None for i in range(200))); d.close()",
            str(root / "db"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert reader.stdout.split() == ["200", "0"]


def test_the_durable_state_survives_a_daemon_restart(mount: LazyMount) -> None:
    root = mount.mountpoint
    (root / "d").mkdir()
    write(root / "d" / "f", b"synced", sync=True)
    write(root / "d" / "g", b"unsynced", sync=False)
    sync_directory(root / "d")
    sync_directory(root)
    mount.stop()
    assert not is_mounted(root)
    mount.start()
    assert sorted(p.name for p in (root / "d").iterdir()) == ["f", "g"]
    assert ((root / "d" / "f").read_bytes(), (root / "d" / "g").read_bytes()) == (b"synced", b"")


def test_stop_unmounts_even_when_the_daemon_died(mount: LazyMount) -> None:
    assert mount.process is not None
    mount.process.kill()
    mount.process.wait()
    assert is_mounted(mount.mountpoint)  # a dead FUSE mount stays until unmounted
    mount.stop()
    assert not is_mounted(mount.mountpoint)


def test_a_mount_given_relative_paths_syncs_into_its_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`quorumq-jepsen run` keeps its runs under the relative `runs/`: the daemon must not lose its
    store when libfuse changes its working directory (fsync failed with ENOENT)."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    monkeypatch.chdir(tmp_path)
    lazy = LazyMount(Path("mnt"), Path("store"), Path("lazyfs.log"))
    lazy.start()
    try:
        write(tmp_path / "mnt" / "synced", b"kept", sync=True)
        sync_directory(tmp_path / "mnt")
        lazy.discard()
        assert (tmp_path / "mnt" / "synced").read_bytes() == b"kept"
    finally:
        lazy.stop()


def test_a_filled_mount_reports_its_room_and_refuses_writes_past_it(mount: LazyMount) -> None:
    root = mount.mountpoint
    write(root / "before", b"b" * 10_000, sync=True)
    assert mount.fill(1 << 20)["capacity"] == 10_000 + (1 << 20)
    room = os.statvfs(root)
    assert room.f_bavail * room.f_frsize == (1 << 20) // room.f_frsize * room.f_frsize
    with pytest.raises(OSError) as refused:
        (root / "too-big").write_bytes(b"t" * (2 << 20))  # a short write, then ENOSPC
    assert refused.value.errno == errno.ENOSPC
    mount.unfill()
    write(root / "fits-again", b"f" * (2 << 20), sync=True)
    assert os.statvfs(root).f_bavail * os.statvfs(root).f_frsize > 2 << 20
