"""Which peers this node hears, judged once per node pair rather than once per group.

A quiet group (`RaftNode.quiesce`) counts no ticks, so its followers would never notice a dead leader.
Each node sends every peer a small beat every few ticks instead, and any frame from a peer counts as
hearing it; a peer unheard for long enough is silent, and the host wakes every group it shares with it.
"""

from __future__ import annotations

from collections.abc import Iterable


class PeerLiveness:
    """When each peer was last heard, in host ticks, and which of them fell silent since last asked."""

    def __init__(self, silent_after_ticks: int) -> None:
        self.silent_after_ticks = silent_after_ticks
        self._heard: dict[str, int] = {}
        self._silent: set[str] = set()

    def heard(self, peer: str, tick: int) -> bool:
        """A frame from `peer` arrived at `tick`; True when the peer was silent until then."""
        self._heard[peer] = tick
        if peer in self._silent:
            self._silent.discard(peer)
            return True
        return False

    def fell_silent(self, peers: Iterable[str], tick: int) -> list[str]:
        """The `peers` unheard for more than `silent_after_ticks` at `tick` that were not silent before
        (a peer never heard counts from the first call that names it)."""
        fallen = []
        for peer in peers:
            last = self._heard.setdefault(peer, tick)
            if peer not in self._silent and tick - last > self.silent_after_ticks:
                self._silent.add(peer)
                fallen.append(peer)
        return fallen

    def live(self, peer: str) -> bool:
        """Whether `peer` is named and not silent."""
        return peer in self._heard and peer not in self._silent
