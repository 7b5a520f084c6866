"""Which groups each peer leads, as the peers announce it: the hints a node follows for groups whose
leader it does not know itself (not hosted here, or its replica heard no leader yet).

Every node announces the groups it leads to each peer about once a second. To a peer that said it reads
changes (`READS_CHANGES_KEY` in its own whole announcement), the whole map (`LEADERS_KEY`) goes first on
a link and every `WHOLE_EVERY` announcements; between them only what changed (`CHANGES_KEY`: a group
led since, with its term, or None for one led no more), and nothing at all when nothing changed, so idle
groups cost no traffic. A peer that never said so (an older build) gets the whole map every time, as
before. A send that fails, a link down when it is time to announce, or a lost link, sends the whole map
next.

A hint counts while the peer that announced it is heard (`live`, `PeerLiveness`): a node cut off from
that peer must not keep it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

LEADERS_KEY = "leaders"
CHANGES_KEY = "leaders_changed"
READS_CHANGES_KEY = "leader_changes"
WHOLE_EVERY = 30
"""Announcements between two whole maps to a peer that reads changes (a repair, should one be lost)."""

Send = Callable[[str, dict[str, Any]], bool]


class LeaderHints:
    """The leader hints this node learned from its peers, and what it last told each of them."""

    def __init__(self, node: str, live: Callable[[str], bool]) -> None:
        """`node` is this node's name; `live(peer)` whether `peer` is heard now."""
        self._node = node
        self._live = live
        self._hints: dict[str, tuple[str, int]] = {}  # group -> (its leader, the term announced)
        self._told: dict[str, dict[str, int]] = {}  # peer -> what it was last told: group -> term
        self._since_whole: dict[str, int] = {}  # peer -> changes sent since its last whole map
        self._reads_changes: set[str] = set()

    def leader(self, gid: str) -> str | None:
        """The leader a heard peer announced for `gid`, if any."""
        hint = self.hint(gid)
        return hint[0] if hint is not None else None

    def hint(self, gid: str) -> tuple[str, int] | None:
        """The leader a heard peer announced for `gid` and the term it announced, if any."""
        hint = self._hints.get(gid)
        return hint if hint is not None and self._live(hint[0]) else None

    def owes_whole(self, peer: str) -> bool:
        """Whether `peer` is told the whole map at the next announcement (a new or lost link, or a send
        that failed): it may be a process that just started, with groups that know no leader yet."""
        return peer not in self._told

    def announce(self, led: Mapping[str, int], peers: Mapping[str, bool], send: Send) -> None:
        """Tell each of `peers` whose link is up (peer -> up) through `send` that this node leads `led`
        (group -> term): the whole map, or what changed since it was last told. A peer whose link is down
        is told nothing, and the whole map once it is up (what was queued for it may have been dropped)."""
        for peer, up in peers.items():
            if not up:
                self._told.pop(peer, None)
                continue
            told = self._told.get(peer)
            since = self._since_whole.get(peer, 0)
            if told is None or peer not in self._reads_changes or since >= WHOLE_EVERY:
                whole = {gid: [self._node, term] for gid, term in led.items()}
                self._sent(peer, send(peer, {LEADERS_KEY: whole, READS_CHANGES_KEY: 1}), led, 0)
            elif told != led:
                changes: dict[str, list[Any] | None] = {
                    gid: [self._node, term] for gid, term in led.items() if told.get(gid) != term
                }
                changes.update((gid, None) for gid in told if gid not in led)
                self._sent(peer, send(peer, {CHANGES_KEY: changes}), led, since + 1)
            else:
                self._since_whole[peer] = since + 1

    def _sent(self, peer: str, sent: bool, led: Mapping[str, int], since: int) -> None:
        if sent:
            self._told[peer], self._since_whole[peer] = dict(led), since
        else:
            self._told.pop(peer, None)  # the next announcement is whole

    def learn(self, peer: str, control: dict[str, Any]) -> list[str]:
        """Take (and remove from `control`) what `peer` announced of the groups it leads; the groups it
        announced a leader of. Raises TypeError or ValueError on a malformed announcement."""
        announced: list[str] = []
        whole = control.pop(LEADERS_KEY, None)
        changes = control.pop(CHANGES_KEY, None)
        reads_changes = control.pop(READS_CHANGES_KEY, None)
        if whole is not None:
            if not isinstance(whole, dict):
                raise TypeError("leader announcement is not a map")
            if reads_changes == 1:
                self._reads_changes.add(peer)
            else:
                self._reads_changes.discard(peer)
            for gid, (leader, term) in whole.items():
                self._take(gid, leader, term)
            announced.extend(whole)
            for gid in [gid for gid, hint in self._hints.items() if hint[0] == peer and gid not in whole]:
                del self._hints[gid]
        if changes is not None:
            if not isinstance(changes, dict):
                raise TypeError("leader changes are not a map")
            for gid, told in changes.items():
                if told is not None:
                    leader, term = told
                    self._take(gid, leader, term)
                    announced.append(gid)
                elif (hint := self._hints.get(gid)) is not None and hint[0] == peer:
                    del self._hints[gid]
        return announced

    def _take(self, gid: str, leader: str, term: int) -> None:
        known = self._hints.get(gid)
        if known is None or known[1] <= term:
            self._hints[gid] = (leader, term)

    def link_lost(self, peer: str) -> None:
        """`peer`'s link closed: it is told the whole map next, and reads changes once it says so again
        (it may come back as an older build)."""
        self._told.pop(peer, None)
        self._reads_changes.discard(peer)
