"""A lazy filesystem as its mount shows it: a namespace and file contents over a `DurableStore`, with no
FUSE in it (the FUSE operations in `lazy_fs.py` call it under `lock`; tests call it directly).

What a `discard` keeps (everything else is lost, as in a power failure):

- a file's content and size as of its last fsync or fdatasync, or of the last write through a handle
  opened with O_SYNC, O_DSYNC or O_DIRECT (such a write syncs the file before it returns); a truncate
  is a change of content and size, durable at the file's next sync;
- a directory's entries as of its last fsync (an fsyncdir, e.g. fsync on a descriptor opened on the
  directory): create, mkdir, unlink, rmdir, rename, link are all durable only that way, so a file
  whose content was synced but whose directory was not is gone;
- a rename changes two entries, each made durable by a sync of its own directory: within one
  directory it is atomic; across directories the new name is durable when the target directory is
  synced and the old name's removal when the source is. With only the source synced the file has no
  durable name (gone after a discard); with only the target synced it has both (a file keeps them as
  hard links; a directory keeps its first in breadth-first name order, see `DurableStore.load`);
- permission bits are durable with an entry naming the inode; times are not kept (after a discard
  they are the store files' times). Symbolic links, special files and extended attributes are not
  supported.

A capacity, when set (`fill`), bounds the bytes all files may hold: a write, truncate or size-growing
fallocate that would grow them past it fails with ENOSPC (a FALLOC_FL_KEEP_SIZE reservation is not
counted, as it reserves nothing here), and statfs reports the room left (`lazy_fs.py`), as a full
disk does. `unfill` lifts it.

A discard closes every handle: it models a machine losing power, so it is meant for a mount whose
users are dead (the harness SIGKILLs a node before discarding its filesystem).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from dataclasses import dataclass, field

from jepsen_tests.lazy_file import LazyFile
from jepsen_tests.lazy_store import DIRECTORY, FILE, ROOT, DurableStore, Entry, Listing

SYNC_FLAGS = os.O_SYNC | os.O_DSYNC | os.O_DIRECT
FALLOC_FL_KEEP_SIZE = 1


def fail(code: int) -> OSError:
    """The error an operation fails with (FUSE returns its errno to the caller)."""
    return OSError(code, os.strerror(code))


@dataclass(eq=False)
class Node:
    """An inode: names pointing at it now (`links`), handles open on it, permission bits and times."""

    ino: int
    mode: int
    links: int = 0
    opened: int = 0
    mtime_ns: int = field(default_factory=time.time_ns)
    ctime_ns: int = field(default_factory=time.time_ns)

    kind = FILE

    def touch(self) -> None:
        """Its content or entries changed now."""
        self.mtime_ns = self.ctime_ns = time.time_ns()


@dataclass(eq=False)
class FileNode(Node):
    """A regular file and its content."""

    content: LazyFile = field(kw_only=True)


@dataclass(eq=False)
class DirNode(Node):
    """A directory: its entries as seen now and as last synced."""

    entries: dict[str, int] = field(default_factory=dict)
    synced: Listing = field(default_factory=dict)

    kind = DIRECTORY

    def unsynced_entries(self) -> int:
        """Names a discard would remove, bring back or point elsewhere."""
        names = self.entries.keys() | self.synced.keys()
        return sum(1 for n in names if self.entries.get(n) != getattr(self.synced.get(n), "ino", None))


@dataclass(frozen=True)
class Handle:
    """An open file or directory and the flags it was opened with."""

    node: Node
    flags: int


class LazyState:
    """The filesystem over `store`; not thread-safe: callers hold `lock`."""

    def __init__(self, store: DurableStore) -> None:
        self.store = store
        self.lock = threading.Lock()
        self.nodes: dict[int, Node] = {}
        self.handles: dict[int, Handle] = {}
        self.durable_links: dict[int, int] = {}
        self.capacity: int | None = None
        self._next_fh = 1  # never reset: a handle closed by a discard may still be released later
        self._next_ino = ROOT + 1
        self._load()

    # -- lookups ------------------------------------------------------------------------------------

    def node_at(self, path: str) -> Node:
        """The inode at an absolute path."""
        node = self.nodes[ROOT]
        for part in path.split("/"):
            if not part:
                continue
            if not isinstance(node, DirNode):
                raise fail(errno.ENOTDIR)
            ino = node.entries.get(part)
            if ino is None:
                raise fail(errno.ENOENT)
            node = self.nodes[ino]
        return node

    def node_of(self, fh: int | None, path: str | None) -> Node:
        """The inode an open handle is on, or else the one at `path`."""
        if fh is not None and fh in self.handles:
            return self.handles[fh].node
        if path is None:
            raise fail(errno.EBADF)
        return self.node_at(path)

    def file_of(self, fh: int | None, path: str | None = None) -> FileNode:
        """The regular file an open handle (or else `path`) is on."""
        node = self.node_of(fh, path)
        if not isinstance(node, FileNode):
            raise fail(errno.EISDIR)
        return node

    def directory_of(self, fh: int | None, path: str | None = None) -> DirNode:
        """The directory an open handle (or else `path`) is on."""
        node = self.node_of(fh, path)
        if not isinstance(node, DirNode):
            raise fail(errno.ENOTDIR)
        return node

    # -- namespace ----------------------------------------------------------------------------------

    def create(self, path: str, mode: int, flags: int) -> int:
        """Create a new empty file and open it; returns the handle."""
        parent, name = self._free_name(path)
        ino = self._new_ino()
        self._add(parent, name, FileNode(ino, stat.S_IMODE(mode), content=LazyFile(self.store, ino, 0)))
        return self.open(path, flags)

    def mkdir(self, path: str, mode: int) -> None:
        """Create an empty directory."""
        parent, name = self._free_name(path)
        self._add(parent, name, DirNode(self._new_ino(), stat.S_IMODE(mode)))

    def unlink(self, path: str) -> None:
        """Remove a file's name."""
        parent, name = self._parent(path)
        node = self.node_at(path)
        if isinstance(node, DirNode):
            raise fail(errno.EISDIR)
        self._remove(parent, name)

    def rmdir(self, path: str) -> None:
        """Remove an empty directory."""
        parent, name = self._parent(path)
        node = self.node_at(path)
        if not isinstance(node, DirNode):
            raise fail(errno.ENOTDIR)
        if node.entries:
            raise fail(errno.ENOTEMPTY)
        self._remove(parent, name)

    def rename(self, old: str, new: str) -> None:
        """Move a name, replacing what `new` named (POSIX rename)."""
        source, old_name = self._parent(old)
        node = self.node_at(old)
        target, new_name = self._parent(new)
        if (new.rstrip("/") + "/").startswith(old.rstrip("/") + "/") and old != new:
            raise fail(errno.EINVAL)
        replaced_ino = target.entries.get(new_name)
        if replaced_ino == node.ino:
            return
        if replaced_ino is not None:
            replaced = self.nodes[replaced_ino]
            if isinstance(node, DirNode) and not isinstance(replaced, DirNode):
                raise fail(errno.ENOTDIR)
            if isinstance(replaced, DirNode):
                if not isinstance(node, DirNode):
                    raise fail(errno.EISDIR)
                if replaced.entries:
                    raise fail(errno.ENOTEMPTY)
            self._remove(target, new_name)
        del source.entries[old_name]
        target.entries[new_name] = node.ino
        source.touch()
        target.touch()
        node.ctime_ns = time.time_ns()

    def link(self, existing: str, new: str) -> None:
        """Give a file another name."""
        node = self.node_at(existing)
        if isinstance(node, DirNode):
            raise fail(errno.EPERM)
        parent, name = self._free_name(new)
        self._add(parent, name, node)

    def chmod(self, path: str, mode: int) -> None:
        """Set permission bits."""
        node = self.node_at(path)
        node.mode = stat.S_IMODE(mode)
        node.ctime_ns = time.time_ns()

    def set_times(self, path: str, mtime_ns: int) -> None:
        """Set the modification time."""
        self.node_at(path).mtime_ns = mtime_ns

    # -- handles and content ------------------------------------------------------------------------

    def open(self, path: str, flags: int) -> int:
        """Open a file or directory; returns the handle."""
        node = self.node_at(path)
        fh = self._next_fh
        self._next_fh += 1
        self.handles[fh] = Handle(node, flags)
        node.opened += 1
        return fh

    def release(self, fh: int) -> None:
        """Close a handle (one closed by a discard is ignored)."""
        handle = self.handles.pop(fh, None)
        if handle is None:
            return
        node = handle.node
        node.opened -= 1
        if isinstance(node, FileNode) and node.opened == 0:
            node.content.close()
        self._collect(node)

    def read(self, fh: int, offset: int, size: int) -> bytes:
        """Read through a handle."""
        return self.file_of(fh).content.read(offset, size)

    def write(self, fh: int, offset: int, data: bytes) -> int:
        """Write through a handle; durable before returning if it was opened O_SYNC/O_DSYNC/O_DIRECT."""
        handle = self.handles.get(fh)
        if handle is None:
            raise fail(errno.EBADF)
        node = self.file_of(fh)
        self._make_room(node, offset + len(data))
        written = node.content.write(offset, data)
        node.touch()
        if handle.flags & SYNC_FLAGS:
            node.content.sync()
        return written

    def truncate(self, path: str | None, size: int, fh: int | None = None) -> None:
        """Cut or extend a file (through a handle when given)."""
        node = self.file_of(fh, path)
        self._make_room(node, size)
        node.content.truncate(size)
        node.touch()

    def fallocate(self, fh: int, mode: int, offset: int, length: int) -> None:
        """Reserve space: only growing the size (mode 0) or nothing visible (FALLOC_FL_KEEP_SIZE)."""
        node = self.file_of(fh)
        if mode & ~FALLOC_FL_KEEP_SIZE:
            raise fail(errno.EOPNOTSUPP)
        if not mode & FALLOC_FL_KEEP_SIZE and offset + length > node.content.size:
            self._make_room(node, offset + length)
            node.content.truncate(offset + length)
            node.touch()

    def fsync(self, fh: int | None, path: str | None = None) -> None:
        """Make a file's content and size, or a directory's entries, durable."""
        node = self.node_of(fh, path)
        if isinstance(node, FileNode):
            node.content.sync()
        elif isinstance(node, DirNode):
            self._sync_directory(node)

    # -- capacity ---------------------------------------------------------------------------------

    def used_bytes(self) -> int:
        """The bytes all files hold now (their sizes, open but unlinked ones included)."""
        return sum(n.content.size for n in self.nodes.values() if isinstance(n, FileNode))

    def fill(self, free: int) -> dict[str, int]:
        """Set the capacity to what is used now plus `free` bytes: the disk is that close to full."""
        self.capacity = self.used_bytes() + free
        return self.space()

    def unfill(self) -> dict[str, int]:
        """Lift the capacity: room again as on the disk beneath."""
        self.capacity = None
        return self.space()

    def space(self) -> dict[str, int]:
        """The bytes used, and the capacity (-1 when none is set)."""
        return {"used_bytes": self.used_bytes(), "capacity": -1 if self.capacity is None else self.capacity}

    def _make_room(self, node: FileNode, size: int) -> None:
        """ENOSPC when growing `node` to `size` bytes would take the files past the capacity."""
        growth = size - node.content.size
        if self.capacity is not None and growth > 0 and self.used_bytes() + growth > self.capacity:
            raise fail(errno.ENOSPC)

    # -- power --------------------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """What a discard would lose now, and how much there is."""
        files = [n for n in self.nodes.values() if isinstance(n, FileNode)]
        directories = [n for n in self.nodes.values() if isinstance(n, DirNode)]
        return {
            "dirty_bytes": sum(n.content.dirty_bytes for n in files),
            "unsynced_files": sum(1 for n in files if n.content.unsynced),
            "unsynced_entries": sum(n.unsynced_entries() for n in directories),
            "files": len(files),
            "directories": len(directories),
            "open_handles": len(self.handles),
        }

    def discard(self) -> dict[str, int]:
        """Lose everything not durable: the mount shows exactly the store afterwards. Returns the
        stats from just before, i.e. what was lost."""
        lost = self.stats()
        self._load()
        return lost

    # -- internals ----------------------------------------------------------------------------------

    def _load(self) -> None:
        for node in self.nodes.values():
            if isinstance(node, FileNode):
                node.content.close()
        listings = self.store.load()
        self.handles.clear()
        self.nodes = {ROOT: DirNode(ROOT, 0o755, links=1)}
        self.durable_links = {ROOT: 1}
        for listing in listings.values():
            for entry in listing.values():
                if entry.ino not in self.nodes:
                    self.nodes[entry.ino] = self._durable_node(entry)
                self.nodes[entry.ino].links += 1
                self.durable_links[entry.ino] = self.durable_links.get(entry.ino, 0) + 1
        for ino, listing in listings.items():
            directory = self.nodes[ino]
            assert isinstance(directory, DirNode)
            directory.synced = dict(listing)
            directory.entries = {name: entry.ino for name, entry in listing.items()}
        self._next_ino = max(self.nodes) + 1

    def _durable_node(self, entry: Entry) -> Node:
        if entry.kind == DIRECTORY:
            return DirNode(entry.ino, entry.mode)
        path = self.store.data_path(entry.ino)
        size, mtime = (path.stat().st_size, path.stat().st_mtime_ns) if path.exists() else (0, time.time_ns())
        return FileNode(entry.ino, entry.mode, mtime_ns=mtime, content=LazyFile(self.store, entry.ino, size))

    def _new_ino(self) -> int:
        self._next_ino += 1
        return self._next_ino - 1

    def _parent(self, path: str) -> tuple[DirNode, str]:
        head, _, name = path.rstrip("/").rpartition("/")
        if not name:
            raise fail(errno.EBUSY)  # the root itself
        parent = self.node_at(head or "/")
        if not isinstance(parent, DirNode):
            raise fail(errno.ENOTDIR)
        return parent, name

    def _free_name(self, path: str) -> tuple[DirNode, str]:
        parent, name = self._parent(path)
        if name in parent.entries:
            raise fail(errno.EEXIST)
        return parent, name

    def _add(self, parent: DirNode, name: str, node: Node) -> None:
        self.nodes[node.ino] = node
        parent.entries[name] = node.ino
        node.links += 1
        parent.touch()

    def _remove(self, parent: DirNode, name: str) -> None:
        node = self.nodes[parent.entries.pop(name)]
        node.links -= 1
        node.ctime_ns = time.time_ns()
        parent.touch()
        self._collect(node)

    def _sync_directory(self, directory: DirNode) -> None:
        nodes = self.nodes
        listing = {name: Entry(i, nodes[i].kind, nodes[i].mode) for name, i in directory.entries.items()}
        if listing == directory.synced:
            return
        self.store.write_listing(directory.ino, listing)
        gone = [e for n, e in directory.synced.items() if listing.get(n) != e]
        for name, entry in listing.items():
            if directory.synced.get(name) != entry:
                self.durable_links[entry.ino] = self.durable_links.get(entry.ino, 0) + 1
        directory.synced = listing
        for entry in gone:
            self._drop_durable_link(entry)

    def _collect(self, node: Node) -> None:
        """Forget an inode nothing names or holds open; delete its store files too when no synced
        entry names it either."""
        if node.links > 0 or node.opened > 0 or node.ino == ROOT:
            return
        del self.nodes[node.ino]
        if isinstance(node, FileNode):
            node.content.close()
        if node.ino not in self.durable_links:
            self._delete_durable(node.ino, node.kind)

    def _drop_durable_link(self, entry: Entry) -> None:
        left = self.durable_links[entry.ino] - 1
        if left:
            self.durable_links[entry.ino] = left
            return
        del self.durable_links[entry.ino]
        if entry.ino not in self.nodes:
            self._delete_durable(entry.ino, entry.kind)

    def _delete_durable(self, ino: int, kind: str) -> None:
        children = self.store.listing(ino) if kind == DIRECTORY else {}
        self.store.remove(ino)
        for entry in children.values():
            self._drop_durable_link(entry)
