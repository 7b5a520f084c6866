"""Flow control: the appends sent to one follower and not yet acknowledged."""

from __future__ import annotations

from collections import deque


class Inflights:
    """A bounded FIFO of the last index carried by each unacknowledged append."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._last_indexes: deque[int] = deque()

    def __len__(self) -> int:
        return len(self._last_indexes)

    def full(self) -> bool:
        """No further append may be sent until an acknowledgement frees a slot."""
        return len(self._last_indexes) >= self.capacity

    def add(self, last_index: int) -> None:
        """Record an append whose last entry is `last_index`."""
        self._last_indexes.append(last_index)

    def free_le(self, index: int) -> None:
        """Forget every append acknowledged by an ack for `index`."""
        while self._last_indexes and self._last_indexes[0] <= index:
            self._last_indexes.popleft()

    def free_first_one(self) -> None:
        """Free the oldest slot (a heartbeat answered, so the pipe is not dead)."""
        if self._last_indexes:
            self._last_indexes.popleft()

    def reset(self) -> None:
        """Forget everything in flight."""
        self._last_indexes.clear()
