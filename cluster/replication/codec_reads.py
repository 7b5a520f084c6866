"""Which version of a replicated format each peer said it reads, and so which version a writer may use.

The rolling-upgrade rule: a node writes the newest version of a format that every other node of the
cluster said it reads (`FormatVersions` names them), up to its own; version 0, which every node reads,
while one of them said nothing. An older node cannot decode a newer entry: its replica would halt
there (`cluster.replication.unreadable_entry`). Every node says what it reads in a control frame to each peer,
every second (`{key: version}`; nodes that predate this ignore the key and never send it, so they count as
reading version 0).

A peer's word belongs to the peer as it was linked when it spoke (decision 0018): once that link is
lost, the word stands while the peer stays away (a node that is down reads nothing, and the same
process may come back), and counts no more once the peer is linked again, until it speaks again: it
may be another process (a restart, or a rollback to an older version) and is then taken to read
version 0. A peer that has not spoken since it linked, or since this node started, is not known yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any


class CodecReads:
    """What peers said they read of one format: this node reads up to `version`, and says so under
    `key` in its control frames; `linked(peer)` tells whether the peer's link is up now."""

    def __init__(self, key: str, version: int, linked: Callable[[str], bool]) -> None:
        self.key = key
        self.version = version
        self._linked = linked
        self._said: dict[str, int] = {}  # what each peer said on its current link
        self._said_before: dict[str, int] = {}  # what it said on a link since lost

    def announcement(self) -> dict[str, int]:
        """The control frame telling a peer which version this node reads."""
        return {self.key: self.version}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Note what a peer's control frame says it reads (frames without the key say nothing)."""
        said = control.get(self.key)
        if type(said) is int:
            self._said[peer] = said
            self._said_before.pop(peer, None)

    def link_lost(self, peer: str) -> None:
        """`peer`'s link closed: what it said belongs to a link gone (`reads`)."""
        said = self._said.pop(peer, None)
        if said is not None:
            self._said_before[peer] = said

    def reads(self, peer: str) -> int | None:
        """The version `peer` reads as far as this node knows: what it said on its current link, or, while
        it is not linked, what it said last; None when it has not said (since it linked again)."""
        if peer in self._said:
            return self._said[peer]
        return None if self._linked(peer) else self._said_before.get(peer)

    def version_for(self, others: Iterable[str]) -> int:
        """The version to write where the nodes `others` may read it: the newest every one of them said
        it reads (0 for one not known), at most `version` (so a cluster that still has a node of the
        previous version writes that version, not 0)."""
        return min([self.version, *(self.reads(peer) or 0 for peer in others)])

    def not_yet_known(self, others: Iterable[str], version: int) -> list[str]:
        """Of `others`, those not known to read `version`, when that is only because they have not said
        what they read (none of them said it reads an older one); else no one: they are refused."""
        said = {peer: self.reads(peer) for peer in others}
        if any(read is not None and read < version for read in said.values()):
            return []
        return sorted(peer for peer, read in said.items() if read is None)
