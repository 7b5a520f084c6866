"""The durable half of a lazy filesystem: what survives a discard, kept as real files under STORE_DIR.

Layout (inode 1 is the root directory; an absent file means empty):

    STORE_DIR/data/<ino>   the synced content of file inode <ino>, its size the synced size
    STORE_DIR/dirs/<ino>   the entries of directory inode <ino> as of its last fsync, as JSON
                           {"name": [ino, "f" | "d", permission bits], ...}

A file's content is written in place and fsynced before the fsync that made it durable returns; a
listing is replaced atomically (`write_durably`: a temporary file, fsynced, renamed over it, `dirs/`
fsynced).
`load` walks the listings from the root and deletes the files of every inode it cannot reach, so the
store holds exactly the durable tree after a restart or a discard.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from cluster.store.durable_files import sync_directory, write_durably

ROOT = 1
FILE = "f"
DIRECTORY = "d"


class Entry(NamedTuple):
    """A directory entry: the inode it names, the inode's kind (FILE or DIRECTORY) and permission bits."""

    ino: int
    kind: str
    mode: int


Listing = dict[str, Entry]


class DurableStore:
    """The synced files and directory listings of one lazy filesystem, under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.dirs = root / "dirs"
        for directory in (root, self.data, self.dirs):
            directory.mkdir(parents=True, exist_ok=True)

    def data_path(self, ino: int) -> Path:
        """Where file inode `ino`'s synced content lives."""
        return self.data / str(ino)

    def open_data(self, ino: int, create: bool) -> int | None:
        """A read-write descriptor on file inode `ino`'s synced content; None when it has none and not
        `create`. A created file's entry in `data/` is made durable before this returns."""
        path = self.data_path(ino)
        try:
            return os.open(path, os.O_RDWR)
        except FileNotFoundError:
            if not create:
                return None
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        sync_directory(self.data)
        return descriptor

    def listing(self, ino: int) -> Listing:
        """Directory inode `ino`'s entries as last synced."""
        try:
            raw = json.loads((self.dirs / str(ino)).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return {name: Entry(int(e[0]), str(e[1]), int(e[2])) for name, e in raw.items()}

    def write_listing(self, ino: int, listing: Listing) -> None:
        """Replace directory inode `ino`'s synced entries, durably, before returning."""
        text = json.dumps({name: list(entry) for name, entry in listing.items()})
        write_durably(self.dirs / str(ino), text)

    def remove(self, ino: int) -> None:
        """Delete whatever the store holds for an inode no durable entry names any more."""
        self.data_path(ino).unlink(missing_ok=True)
        (self.dirs / str(ino)).unlink(missing_ok=True)

    def load(self) -> dict[int, Listing]:
        """The synced listing of every directory reachable from the root; deletes the files of every
        inode no reachable listing names. A directory is attached at its first name in breadth-first
        order of sorted names: a directory moved with only its new parent synced has two synced names,
        and the later one is removed from its listing (a file keeps both, as hard links)."""
        listings: dict[int, Listing] = {}
        reached = {ROOT}
        queue = [ROOT]
        while queue:
            directory = queue.pop(0)
            stored = self.listing(directory)
            listing: Listing = {}
            for name, entry in sorted(stored.items()):
                if entry.kind == DIRECTORY and entry.ino in reached:
                    continue
                listing[name] = entry
                if entry.ino not in reached and entry.kind == DIRECTORY:
                    queue.append(entry.ino)
                reached.add(entry.ino)
            if listing != stored:
                self.write_listing(directory, listing)
            listings[directory] = listing
        for ino in self._stored_inodes():
            if ino not in reached:
                self.remove(ino)
        return listings

    def _stored_inodes(self) -> Iterator[int]:
        for directory in (self.data, self.dirs):
            for path in directory.iterdir():
                if path.name.isdigit():
                    yield int(path.name)
                else:
                    path.unlink()  # a listing's temporary left by a crash mid-write
