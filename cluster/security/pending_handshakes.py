"""Connections to the Raft port that have not authenticated yet, in bounded number.

One source address may hold `per_source` of them at once: its further connections are closed at once.
All sources together may hold `total`: a new connection then closes the oldest pending one, so a flood
from many addresses cannot keep a peer out (a peer's handshake takes a round trip; the flood would have
to open `total` connections within it), and a silent connection holds its slot for at most the
handshake deadline anyway.
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict

MAX_PENDING_HANDSHAKES = 128
MAX_PENDING_PER_SOURCE = 8


class PendingHandshakes:
    """The writers of unauthenticated connections, oldest first, and how many each source holds."""

    def __init__(self, total: int = MAX_PENDING_HANDSHAKES, per_source: int = MAX_PENDING_PER_SOURCE) -> None:
        self.total = total
        self.per_source = per_source
        self._pending: OrderedDict[asyncio.StreamWriter, str] = OrderedDict()
        self._per_source: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._pending)

    def admit(self, writer: asyncio.StreamWriter, source: str) -> bool:
        """Whether a new connection from `source` may start its handshake (closing the oldest pending
        one if all slots are taken); False when its source already holds its share."""
        if self._per_source[source] >= self.per_source:
            return False
        while len(self._pending) >= self.total:
            oldest, _ = next(iter(self._pending.items()))
            self.settled(oldest)
            oldest.close()
        self._pending[writer] = source
        self._per_source[source] += 1
        return True

    def settled(self, writer: asyncio.StreamWriter) -> None:
        """The connection authenticated, failed, or closed: it no longer holds a slot."""
        source = self._pending.pop(writer, None)
        if source is None:
            return
        self._per_source[source] -= 1
        if not self._per_source[source]:
            del self._per_source[source]
