"""The read of the whole database a node makes once after it opens, while it serves (decision 0016).

Every key and value is read once, so RocksDB verifies the checksum of every table and blob file block
that holds live data. It runs in bounded steps on the event loop (RocksDB's reads hold the GIL: a thread
would stall the loop as much), resuming after the last key read, so requests are answered between steps.
Damage it meets takes the runtime path of decision 0011 (`NodeStore.on_damage`: a synced marker, exit
75, the database set aside at the next start).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

STEP_BYTES = 4 * 1024 * 1024
"""Bytes read per turn of the event loop (~5 ms here)."""

ReadThrough = Callable[[bytes | None, int], tuple[bytes | None, int]]
"""`NodeStore.read_through`: read from after a key up to a number of bytes; the last key read and bytes."""


class StoreCheck:
    """Reads the store through once (`read_through`); `done` and `checked_bytes` say how far it got."""

    def __init__(self, read_through: ReadThrough, step_bytes: int = STEP_BYTES) -> None:
        self.read_through = read_through
        self.step_bytes = step_bytes
        self.done = False
        self.checked_bytes = 0

    async def run(self) -> None:
        """Read the whole store, one step per turn of the event loop. A failure other than damage (which
        stops the node) is logged and ends the check: `done` stays false."""
        started = asyncio.get_running_loop().time()
        after: bytes | None = None
        try:
            while True:
                after, read = self.read_through(after, self.step_bytes)
                self.checked_bytes += read
                if after is None:
                    break
                await asyncio.sleep(0)
        except Exception:
            log.exception("store check stopped after %d MB read", self.checked_bytes // 1_000_000)
            raise
        self.done = True
        log.info(
            "store check done: %d MB read, no damage, in %.2f s",
            self.checked_bytes // 1_000_000,
            asyncio.get_running_loop().time() - started,
        )

    def report(self) -> dict[str, object]:
        """What `GET /api/health` shows: whether the check is done and how much it has read."""
        return {"done": self.done, "checked_bytes": self.checked_bytes}
