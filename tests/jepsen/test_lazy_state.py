"""The lazy filesystem's model without FUSE: what a discard (or a daemon restart) keeps and loses."""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path

import pytest

from jepsen_tests.lazy_file import PAGE, LazyFile
from jepsen_tests.lazy_state import FileNode, LazyState
from jepsen_tests.lazy_store import DurableStore


@pytest.fixture
def state(tmp_path: Path) -> LazyState:
    return LazyState(DurableStore(tmp_path / "store"))


def write_file(state: LazyState, path: str, data: bytes, *, sync: bool, flags: int = os.O_WRONLY) -> None:
    fh = state.create(path, 0o644, flags)
    state.write(fh, 0, data)
    if sync:
        state.fsync(fh)
    state.release(fh)


def sync_dir(state: LazyState, path: str) -> None:
    fh = state.open(path, os.O_RDONLY)
    state.fsync(fh)
    state.release(fh)


def content(state: LazyState, path: str) -> bytes:
    node = state.node_at(path)
    assert isinstance(node, FileNode)
    return node.content.read(0, node.content.size)


def names(state: LazyState, path: str = "/") -> set[str]:
    return set(state.directory_of(None, path).entries)


def test_unsynced_data_is_lost_and_synced_data_kept(state: LazyState) -> None:
    write_file(state, "/synced", b"kept", sync=True)
    write_file(state, "/unsynced", b"lost", sync=False)
    sync_dir(state, "/")
    assert content(state, "/unsynced") == b"lost"  # reads see every write until the discard
    lost = state.discard()
    assert lost["dirty_bytes"] == 4 and lost["unsynced_files"] == 1
    assert content(state, "/synced") == b"kept"
    assert content(state, "/unsynced") == b""  # its name was synced, its data was not


def test_a_synced_file_whose_directory_was_not_synced_is_gone(state: LazyState) -> None:
    state.mkdir("/dir", 0o755)
    sync_dir(state, "/")
    write_file(state, "/dir/file", b"data", sync=True)
    assert state.stats()["unsynced_entries"] == 1
    state.discard()
    assert names(state, "/dir") == set()
    assert list((state.store.root / "data").iterdir()) == []  # its synced content was collected


def test_a_directory_whose_parent_was_not_synced_is_gone_with_what_it_holds(state: LazyState) -> None:
    state.mkdir("/dir", 0o755)
    write_file(state, "/dir/file", b"data", sync=True)
    sync_dir(state, "/dir")
    state.discard()
    assert names(state) == set()


def test_an_unsynced_rename_reverts_and_a_synced_one_stays(state: LazyState) -> None:
    write_file(state, "/CURRENT", b"old", sync=True)
    write_file(state, "/CURRENT.tmp", b"new", sync=True)
    sync_dir(state, "/")
    state.rename("/CURRENT.tmp", "/CURRENT")
    assert content(state, "/CURRENT") == b"new" and names(state) == {"CURRENT"}
    state.discard()
    assert content(state, "/CURRENT") == b"old" and names(state) == {"CURRENT", "CURRENT.tmp"}
    state.rename("/CURRENT.tmp", "/CURRENT")
    sync_dir(state, "/")
    state.discard()
    assert content(state, "/CURRENT") == b"new" and names(state) == {"CURRENT"}


@pytest.mark.parametrize(
    ("synced", "left"),
    [
        ((), {"a": {"f"}, "b": set()}),
        (("/a",), {"a": set(), "b": set()}),
        (("/b",), {"a": {"f"}, "b": {"g"}}),
    ],
)
def test_a_rename_across_directories_needs_both_synced(
    state: LazyState, synced: tuple[str, ...], left: dict[str, set[str]]
) -> None:
    state.mkdir("/a", 0o755)
    state.mkdir("/b", 0o755)
    write_file(state, "/a/f", b"moved", sync=True)
    for path in ("/a", "/"):
        sync_dir(state, path)
    state.rename("/a/f", "/b/g")
    for path in synced:
        sync_dir(state, path)
    state.discard()
    assert {d: names(state, f"/{d}") for d in ("a", "b")} == left
    for d, inside in left.items():
        for name in inside:
            assert content(state, f"/{d}/{name}") == b"moved"


def test_a_directory_moved_with_only_its_new_parent_synced_keeps_one_name(state: LazyState) -> None:
    for path in ("/a", "/b", "/a/d"):
        state.mkdir(path, 0o755)
    for path in ("/a", "/"):
        sync_dir(state, path)
    state.rename("/a/d", "/b/d")
    sync_dir(state, "/b")
    state.discard()
    assert (names(state, "/a"), names(state, "/b")) == ({"d"}, set())
    state.rmdir("/a/d")  # a consistent tree: the directory has one name and can be removed
    sync_dir(state, "/a")
    state.discard()
    assert names(state, "/a") == set()


@pytest.mark.parametrize("flag", [os.O_SYNC, os.O_DSYNC, os.O_DIRECT])
def test_a_write_through_a_synchronous_handle_is_durable_at_once(state: LazyState, flag: int) -> None:
    write_file(state, "/log", b"", sync=True)
    sync_dir(state, "/")
    fh = state.open("/log", os.O_WRONLY | flag)
    state.write(fh, 0, b"record")
    state.discard()
    assert content(state, "/log") == b"record"


def test_unlink_and_link_are_durable_only_with_their_directory(state: LazyState) -> None:
    write_file(state, "/a", b"x", sync=True)
    sync_dir(state, "/")
    state.unlink("/a")
    state.discard()
    assert content(state, "/a") == b"x"
    state.link("/a", "/b")
    sync_dir(state, "/")
    state.unlink("/a")
    sync_dir(state, "/")
    state.discard()
    assert names(state) == {"b"} and content(state, "/b") == b"x"
    state.unlink("/b")
    sync_dir(state, "/")
    assert list((state.store.root / "data").iterdir()) == []  # nothing names it: collected at once


def test_truncation_is_content_durable_at_the_file_sync(state: LazyState) -> None:
    write_file(state, "/f", b"abcdefgh", sync=True)
    sync_dir(state, "/")
    state.truncate("/f", 2)
    state.truncate("/f", 6)
    assert content(state, "/f") == b"ab\0\0\0\0"  # the cut bytes do not come back when re-extended
    state.discard()
    assert content(state, "/f") == b"abcdefgh"
    fh = state.open("/f", os.O_WRONLY)
    state.truncate(None, 3, fh)
    state.fsync(fh)
    state.discard()
    assert content(state, "/f") == b"abc"


def test_a_restarted_daemon_sees_exactly_what_a_discard_leaves(tmp_path: Path) -> None:
    store = DurableStore(tmp_path / "store")
    first = LazyState(store)
    first.mkdir("/d", 0o700)
    write_file(first, "/d/f", b"synced", sync=True)
    write_file(first, "/d/g", b"unsynced", sync=False)
    sync_dir(first, "/d")
    sync_dir(first, "/")
    write_file(first, "/h", b"unnamed", sync=True)
    second = LazyState(DurableStore(tmp_path / "store"))
    first.discard()
    for state in (first, second):
        assert names(state) == {"d"} and names(state, "/d") == {"f", "g"}
        assert (content(state, "/d/f"), content(state, "/d/g")) == (b"synced", b"")
        assert state.node_at("/d").mode == 0o700


def test_handles_closed_by_a_discard_are_ignored_and_never_reused(state: LazyState) -> None:
    write_file(state, "/f", b"x", sync=True)
    old = state.open("/f", os.O_RDONLY)
    state.discard()
    with pytest.raises(OSError) as refused:
        state.read(old, 0, 1)
    assert refused.value.errno == errno.EBADF
    state.release(old)
    assert state.create("/g", 0o644, os.O_WRONLY) != old


def test_namespace_errors_follow_posix(state: LazyState) -> None:
    state.mkdir("/d", 0o755)
    write_file(state, "/d/f", b"", sync=False)
    expected = [
        (lambda: state.mkdir("/d", 0o755), errno.EEXIST),
        (lambda: state.rmdir("/d"), errno.ENOTEMPTY),
        (lambda: state.unlink("/d"), errno.EISDIR),
        (lambda: state.rename("/d", "/d/sub"), errno.EINVAL),
        (lambda: state.rename("/d/f", "/d"), errno.EISDIR),
        (lambda: state.link("/d", "/e"), errno.EPERM),
        (lambda: state.node_at("/d/f/x"), errno.ENOTDIR),
        (lambda: state.node_at("/nothing"), errno.ENOENT),
    ]
    for operation, code in expected:
        with pytest.raises(OSError) as failed:
            operation()
        assert failed.value.errno == code


@pytest.mark.parametrize("seed", range(12))
def test_file_content_matches_a_plain_byte_array_through_writes_truncates_and_discards(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    store = DurableStore(tmp_path / "store")
    file = LazyFile(store, 7, 0)
    now, synced = bytearray(), b""
    for _ in range(300):
        action = rng.random()
        if action < 0.5:
            offset = rng.randrange(0, len(now) + 3 * PAGE)
            data = rng.randbytes(rng.choice((1, 100, PAGE - 1, PAGE, 3 * PAGE + 5)))
            file.write(offset, data)
            now.extend(bytes(max(0, offset - len(now))))
            now[offset : offset + len(data)] = data
        elif action < 0.65:
            size = rng.randrange(0, len(now) + 2 * PAGE)
            file.truncate(size)
            now = now[:size] + bytearray(max(0, size - len(now)))
        elif action < 0.75:
            file.sync()
            synced = bytes(now)
        elif action < 0.8:
            file.close()
            file = LazyFile(store, 7, len(synced))  # what a discard leaves
            now = bytearray(synced)
        offset = rng.randrange(0, len(now) + 1)
        length = rng.randrange(0, 2 * PAGE)
        assert file.read(offset, length) == bytes(now[offset : offset + length])
        assert file.size == len(now)
    assert file.read(0, len(now)) == bytes(now)


def test_a_filled_disk_refuses_growth_and_takes_it_again_once_unfilled(state: LazyState) -> None:
    write_file(state, "/old", b"x" * 3000, sync=True)
    assert state.fill(1000) == {"used_bytes": 3000, "capacity": 4000}
    fh = state.create("/new", 0o644, os.O_WRONLY)
    assert state.write(fh, 0, b"y" * 1000) == 1000  # exactly the room left
    for grow in (lambda: state.write(fh, 1000, b"z"), lambda: state.truncate(None, 1001, fh)):
        with pytest.raises(OSError) as refused:
            grow()
        assert refused.value.errno == errno.ENOSPC
    assert state.write(fh, 0, b"w" * 1000) == 1000  # overwriting in place needs no room
    state.truncate(None, 0, fh)  # shrinking frees room
    assert state.write(fh, 0, b"v" * 1000) == 1000
    state.unfill()
    assert state.write(fh, 1000, b"u" * 5000) == 5000
    state.release(fh)
    assert state.space() == {"used_bytes": 9000, "capacity": -1}
