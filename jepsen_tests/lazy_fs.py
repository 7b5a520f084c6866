"""The lazy filesystem daemon: `python -m jepsen_tests.lazy_fs MOUNTPOINT STORE_DIR`.

Mounts a `LazyState` over the store in STORE_DIR at MOUNTPOINT through libfuse3 (the `mfusepy`
binding) and answers control calls (`lazy_control.py`). It runs until unmounted, until SIGTERM,
SIGINT or SIGHUP (libfuse then unmounts), or until its parent process is gone.

Kernel caches: attribute, entry and negative-lookup caches are off (timeouts 0), so a name or size is
never stale after a discard. File pages are cached while a file is open and dropped whenever it is
opened (no `kernel_cache`/`auto_cache`; never `writeback_cache`, so every write reaches the daemon
before it returns), so a file opened after a discard reads what is durable. A handle kept open across
a discard could still read cached pages: the harness discards only the filesystem of a dead node.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import mfusepy

from jepsen_tests.lazy_control import daemon_thread, serve
from jepsen_tests.lazy_state import DirNode, FileNode, LazyState, Node
from jepsen_tests.lazy_store import DurableStore

PARENT_POLL_S = 0.5
SIGNALLED = 8  # what libfuse's fuse_main returns when a signal ended its loop (it has unmounted)
MOUNT_OPTIONS = {
    "fsname": "lazyfs",
    "default_permissions": True,
    "hard_remove": True,  # unlink an open file at once rather than renaming it to .fuse_hidden*
    "use_ino": True,
    "attr_timeout": 0,
    "entry_timeout": 0,
    "negative_timeout": 0,
}

Method = TypeVar("Method", bound=Callable[..., Any])


def locked(method: Method) -> Method:
    """Run a FUSE operation under the state's lock (libfuse calls from several threads)."""

    @functools.wraps(method)
    def run(self: LazyOperations, *args: Any) -> Any:
        with self.state.lock:
            return method(self, *args)

    return run  # type: ignore[return-value]


def attributes(node: Node) -> dict[str, int]:
    """A node as `stat` shows it."""
    if isinstance(node, FileNode):
        kind, size, links = stat.S_IFREG, node.content.size, node.links
    else:
        assert isinstance(node, DirNode)
        kind, size, links = stat.S_IFDIR, len(node.entries), 2
    return {
        "st_mode": kind | node.mode,
        "st_ino": node.ino,
        "st_nlink": links,
        "st_size": size,
        "st_blocks": (size + 511) // 512,
        "st_uid": os.getuid(),
        "st_gid": os.getgid(),
        "st_atime": node.mtime_ns,
        "st_mtime": node.mtime_ns,
        "st_ctime": node.ctime_ns,
    }


class LazyOperations(mfusepy.Operations):
    """FUSE operations, each one call into the state (handles `fh` come from open/create/opendir)."""

    use_ns = True

    def __init__(self, state: LazyState) -> None:
        self.state = state

    @locked
    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, int]:
        return attributes(self.state.node_of(fh, path))

    @locked
    def access(self, path: str, amode: int) -> int:
        self.state.node_at(path)
        return 0

    @locked
    def readdir(self, path: str | None, fh: int) -> list[tuple[str, dict[str, int], int]]:
        directory = self.state.directory_of(fh, path)
        here = {"st_mode": stat.S_IFDIR, "st_ino": directory.ino}
        listed = [(".", here, 0), ("..", here, 0)]  # readdir skips entries with inode 0
        for name, ino in directory.entries.items():
            node = self.state.nodes[ino]
            listed.append((name, {"st_mode": attributes(node)["st_mode"], "st_ino": ino}, 0))
        return listed

    @locked
    def opendir(self, path: str) -> int:
        return self.state.open(path, os.O_RDONLY)

    @locked
    def releasedir(self, path: str | None, fh: int) -> int:
        self.state.release(fh)
        return 0

    @locked
    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        self.state.fsync(fh, path)
        return 0

    @locked
    def mkdir(self, path: str, mode: int) -> int:
        self.state.mkdir(path, mode)
        return 0

    @locked
    def rmdir(self, path: str) -> int:
        self.state.rmdir(path)
        return 0

    @locked
    def unlink(self, path: str) -> int:
        self.state.unlink(path)
        return 0

    @locked
    def rename(self, old: str, new: str) -> int:
        self.state.rename(old, new)
        return 0

    @locked
    def link(self, target: str, source: str) -> int:
        self.state.link(source, target)  # mfusepy: `target` is the new name of `source`
        return 0

    @locked
    def chmod(self, path: str | None, mode: int) -> int:
        if path is not None:
            self.state.chmod(path, mode)
        return 0

    @locked
    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> int:
        if path is not None:
            self.state.set_times(path, times[1] if times else time.time_ns())
        return 0

    @locked
    def create(self, path: str, mode: int, flags: int) -> int:
        return self.state.create(path, mode, flags)

    @locked
    def open(self, path: str, flags: int) -> int:
        return self.state.open(path, flags)

    @locked
    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        return self.state.read(fh, offset, size)

    @locked
    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        return self.state.write(fh, offset, data)

    @locked
    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        self.state.truncate(path, length, fh)
        return 0

    @locked
    def fallocate(self, path: str | None, mode: int, offset: int, size: int, fh: int) -> int:
        self.state.fallocate(fh, mode, offset, size)
        return 0

    @locked
    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        self.state.fsync(fh, path)
        return 0

    def flush(self, path: str | None, fh: int) -> int:
        return 0  # close(2) makes nothing durable

    @locked
    def release(self, path: str | None, fh: int) -> int:
        self.state.release(fh)
        return 0

    @locked
    def statfs(self, path: str) -> dict[str, int]:
        space = os.statvfs(self.state.store.root)
        answer = {key: getattr(space, key) for key in dir(space) if key.startswith("f_") and key != "f_fsid"}
        if self.state.capacity is not None:  # a filled disk: its capacity, and the room left in it
            answer["f_blocks"] = self.state.capacity // space.f_frsize
            room = max(0, self.state.capacity - self.state.used_bytes()) // space.f_frsize
            answer["f_bfree"] = answer["f_bavail"] = room
        return answer


def watch_parent() -> None:
    """SIGTERM this daemon (so it unmounts) when the process that started it is gone."""
    parent = os.getppid()

    def poll() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    daemon_thread(poll, "lazyfs-parent-watch")


def main(argv: list[str] | None = None) -> None:
    """Mount the lazy filesystem and serve it until unmounted or signalled."""
    parser = argparse.ArgumentParser(prog="python -m jepsen_tests.lazy_fs", description=main.__doc__)
    parser.add_argument("mountpoint", type=Path)
    parser.add_argument("store_dir", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s lazyfs %(levelname)s %(message)s")
    store_dir = args.store_dir.resolve()  # libfuse moves the daemon to "/" once mounted
    state = LazyState(DurableStore(store_dir))
    serve(state, store_dir)
    watch_parent()
    try:
        mfusepy.FUSE(LazyOperations(state), str(args.mountpoint), foreground=True, **MOUNT_OPTIONS)
    except RuntimeError as exc:
        if exc.args != (SIGNALLED,):
            raise


if __name__ == "__main__":
    main()
