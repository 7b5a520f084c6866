"""Which version of a replicated format each peer said it reads, and so which version a writer may use.

The rolling-upgrade rule: a node writes the newest version of a format that every other node of the
cluster said it reads (`FormatVersions` names them), up to its own; version 0, which every node reads,
while one of them said nothing. An older node cannot decode a newer entry: its replica would halt
there (`cluster.unreadable_entry`). Every node says what it reads in a control frame to each peer, every
second (`{key: version}`; nodes that predate this ignore the key and never send it, so they count as
reading version 0). A peer's word is kept while this node runs: a node downgraded under the same name must
first be forgotten by the cluster and wiped (its log may hold entries it cannot read anyway).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class CodecReads:
    """What peers said they read of one format: this node reads up to `version`, and says so under
    `key` in its control frames."""

    def __init__(self, key: str, version: int) -> None:
        self.key = key
        self.version = version
        self._reads: dict[str, int] = {}  # the version each peer said it reads

    def announcement(self) -> dict[str, int]:
        """The control frame telling a peer which version this node reads."""
        return {self.key: self.version}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Note what a peer's control frame says it reads (frames without the key say nothing)."""
        said = control.get(self.key)
        if type(said) is int:
            self._reads[peer] = said

    def reads(self, peer: str) -> int:
        """The version `peer` said it reads (0 until it said one)."""
        return self._reads.get(peer, 0)

    def version_for(self, others: Iterable[str]) -> int:
        """The version to write where the nodes `others` may read it: the newest every one of them said
        it reads, at most `version` (so a cluster that still has a node of the previous version writes
        that version, not 0)."""
        return min([self.version, *(self.reads(peer) for peer in others)])
