"""The bytes of message bodies a connection's channels hold before quorumq confirmed them, shared by the
connection: a channel that takes the budget past its limit waits until confirms give enough back, and
while it waits its connection reads no more (TCP pushes back on the client)."""

from __future__ import annotations

import asyncio

CONNECTION_PENDING_BYTES = 64 * 1024 * 1024


class ByteBudget:
    """Bytes taken and given back against a limit; `room` waits while more than the limit is taken."""

    def __init__(self, limit: int = CONNECTION_PENDING_BYTES) -> None:
        self._limit = limit
        self._taken = 0
        self._room = asyncio.Event()
        self._room.set()

    def take(self, amount: int) -> None:
        """Hold `amount` more bytes."""
        self._taken += amount
        if self._taken > self._limit:
            self._room.clear()

    def give(self, amount: int) -> None:
        """Hold `amount` bytes fewer."""
        self._taken -= amount
        if self._taken <= self._limit:
            self._room.set()

    async def room(self) -> None:
        """Return once no more than the limit is taken."""
        await self._room.wait()
