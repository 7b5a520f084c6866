"""One file's content in a lazy filesystem: its synced bytes in the store, overlaid with unsynced pages.

Written data lives in memory, a page at a time, until `sync` writes those pages (and nothing else)
to the store and fsyncs it, so a write costs O(its length) and a sync O(the unsynced bytes). A
truncation is remembered as a floor below which the synced bytes still show; bytes between the floor
and the size that no page covers read as zeros, as after a truncate and re-extend.
"""

from __future__ import annotations

import os

from jepsen_tests.lazy_store import DurableStore

PAGE = 4096


class LazyFile:
    """File inode `ino`'s content: `size` as seen now, `synced_size` as in the store."""

    def __init__(self, store: DurableStore, ino: int, synced_size: int) -> None:
        self.store = store
        self.ino = ino
        self.size = synced_size
        self.synced_size = synced_size
        self._floor = synced_size  # synced bytes at or past it were truncated away since the last sync
        self._pages: dict[int, bytearray] = {}  # page index -> the page's full current content
        self._descriptor: int | None = None

    @property
    def unsynced(self) -> bool:
        """True when a discard would change this file's content or size."""
        return bool(self._pages) or self.size != self.synced_size or self._floor < self.synced_size

    @property
    def dirty_bytes(self) -> int:
        """Bytes written since the last sync that only memory holds (counted in whole pages)."""
        return sum(min(PAGE, self.size - index * PAGE) for index in self._pages)

    def read(self, offset: int, length: int) -> bytes:
        """Up to `length` bytes from `offset`, as the latest writes left them."""
        end = min(offset + length, self.size)
        out = bytearray()
        position = offset
        while position < end:
            index, start = divmod(position, PAGE)
            page = self._pages.get(index)
            if page is not None:
                take = min(PAGE - start, end - position)
                out += page[start : start + take]
            else:
                take = self._clean_run(index, end) - position
                out += self._synced(position, take)
            position += take
        return bytes(out)

    def write(self, offset: int, data: bytes) -> int:
        """Write `data` at `offset` (growing the file as needed); returns its length."""
        position, end = offset, offset + len(data)
        view = memoryview(data)
        while position < end:
            index, start = divmod(position, PAGE)
            take = min(PAGE - start, end - position)
            page = self._pages.get(index)
            if page is None:
                page = self._pages[index] = self._page(index, whole=start == 0 and take == PAGE)
            page[start : start + take] = view[position - offset : position - offset + take]
            position += take
        self.size = max(self.size, end)
        return len(data)

    def truncate(self, size: int) -> None:
        """Cut or extend the file to `size` bytes; extended bytes read as zeros."""
        if size < self.size:
            self._floor = min(self._floor, size)
            last = (size + PAGE - 1) // PAGE
            for index in [i for i in self._pages if i >= last]:
                del self._pages[index]
            if size % PAGE and size // PAGE in self._pages:
                page = self._pages[size // PAGE]
                page[size % PAGE :] = bytes(PAGE - size % PAGE)
        self.size = size

    def sync(self) -> None:
        """Make the content and size durable in the store (fsynced) before returning."""
        if not self.unsynced:
            return
        descriptor = self._open(create=True)
        assert descriptor is not None
        if self._floor < self.synced_size:
            os.ftruncate(descriptor, self._floor)
        for index, page in sorted(self._pages.items()):
            os.pwrite(descriptor, page[: min(PAGE, self.size - index * PAGE)], index * PAGE)
        os.ftruncate(descriptor, self.size)
        os.fsync(descriptor)
        self._pages.clear()
        self.synced_size = self._floor = self.size

    def close(self) -> None:
        """Release the store descriptor (reopened when needed)."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None

    def _clean_run(self, index: int, end: int) -> int:
        """Where the run of pages without unsynced data that starts at page `index` ends (<= end)."""
        while index * PAGE < end and index not in self._pages:
            index += 1
        return min(index * PAGE, end)

    def _page(self, index: int, whole: bool) -> bytearray:
        """A new in-memory page: zeros if it is about to be wholly overwritten, else the synced bytes."""
        if whole:
            return bytearray(PAGE)
        page = bytearray(self._synced(index * PAGE, PAGE))
        page.extend(bytes(PAGE - len(page)))
        return page

    def _synced(self, offset: int, length: int) -> bytes:
        """`length` bytes at `offset` that no page covers: synced bytes below the floor, zeros past it."""
        visible = max(0, min(offset + length, self._floor) - offset)
        data = b""
        if visible:
            descriptor = self._open(create=False)
            data = os.pread(descriptor, visible, offset) if descriptor is not None else b""
        return data + bytes(length - len(data))

    def _open(self, create: bool) -> int | None:
        if self._descriptor is None:
            self._descriptor = self.store.open_data(self.ino, create)
        return self._descriptor
