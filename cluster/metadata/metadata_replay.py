"""Whether a node's metadata has caught up with what its metadata log held when the node opened it.

A restart replays the metadata log in rounds (`RaftHost.apply_bytes_per_round`), and the node reconciles
what it hosts between them: until the replay is over, the metadata it reads may be older than the one it
had reached before (a removal since undone, a queue since deleted). `QueueHosting` does nothing
destructive until then.

The replay is over once the metadata group applied the last entry its log held at open, or an entry of
a later term: the leader of that term held every committed entry (leader completeness), so whatever of
the old log was committed lies before it, and the rest never was. A log opened while being repaired (it
lost entries it may have acknowledged) must also have applied through `Repair.through` again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from raft_log.types import Repair


class ReplayedLog(Protocol):
    """The stored log of the metadata group (`GroupLog`)."""

    def last_index(self) -> int: ...

    def term(self, index: int) -> int: ...


class ReplayedRaft(Protocol):
    """The metadata group's consensus core (`RaftNode`)."""

    @property
    def repair(self) -> Repair | None: ...


class ReplayedGroup(Protocol):
    """The metadata group as the node's Raft host runs it (`raft_host.Group`)."""

    @property
    def log(self) -> ReplayedLog: ...

    @property
    def raft(self) -> ReplayedRaft: ...

    @property
    def applied(self) -> int: ...

    @property
    def applied_term(self) -> int: ...


class MetadataReplay:
    """The replay of the metadata `group` from where its log stood when opened."""

    def __init__(self, group: ReplayedGroup, on_over: Callable[[], None]) -> None:
        last = group.log.last_index()
        repair = group.raft.repair
        self._group = group
        self._held = (group.log.term(last), last)
        self._through = repair.through if repair is not None else 0
        self._on_over = on_over
        self._over = False

    def over(self) -> bool:
        """Whether the replay is over (once over, it stays over); the call that first finds it over calls
        `on_over`."""
        if not self._over:
            group = self._group
            self._over = (
                group.raft.repair is None
                and group.applied >= self._through
                and (group.applied_term, group.applied) >= self._held
            )
            if self._over:
                self._on_over()
        return self._over
