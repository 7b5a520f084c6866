"""A graceful stop's hand-over of leadership: before a node stops, each group it leads asks another
voter to take over (`RaftNode.hand_over`), so that its publishers wait a hand-over rather than an
election timeout, and the node, once restarted, finds every group's leader in place.

A group is settled here once another node leads it and this replica committed an entry of the new
leader's term: the restarted replica then holds the new term and has committed all it holds, which
lets it follow that leader quietly at once (`RaftNode.follow_quietly`) instead of standing for election.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cluster.replication.raft_host import Group


class HandOver:
    """The groups of one node asked to hand their leadership over, and to whom."""

    def __init__(self, groups: Mapping[str, Group], touch: Callable[[str], None]) -> None:
        """`groups` are the node's groups (read live); `touch(gid)` has a group's Ready taken."""
        self._groups = groups
        self._touch = touch
        self._asked: dict[str, str] = {}  # group -> the voter asked to take it over
        self._takers: Collection[str] = ()

    def ask(self, takers: Collection[str]) -> int:
        """Ask each group led here to hand leadership to the most caught-up of its voters among `takers`
        (between equals, one spread by a hash of the group and the voter). A leader drops a hand-over
        not done within an election timeout; asking again retries it. The number of groups asked now
        or asked before and still awaited (`pending`)."""
        self._takers = takers
        asked = {}
        for gid, group in self._groups.items():
            if group.leading:
                voters = sorted(
                    (voter for voter in group.raft.conf.voters if voter in takers),
                    key=lambda voter: zlib.crc32(f"{gid}/{voter}".encode()),
                )
                if (voter := group.raft.hand_over(voters)) is not None:
                    self._touch(gid)
                    asked[gid] = voter
            elif (voter := self._asked.get(gid)) is not None and self._awaited(group, voter):
                asked[gid] = voter
        self._asked = asked
        return len(asked)

    def pending(self) -> bool:
        """Whether a group asked is hosted here and still awaited: not settled, and its leader, or the
        voter asked while it knows none, among the takers (one that stops too, or is gone, may never
        commit its term here)."""
        return any(
            self._awaited(group, voter)
            for gid, voter in self._asked.items()
            if (group := self._groups.get(gid)) is not None and group.halted is None
        )

    def _awaited(self, group: Group, voter: str) -> bool:
        raft = group.raft
        if raft.is_leader:
            return True
        if raft.leader is None:
            return voter in self._takers
        return raft.leader in self._takers and raft.entry_term(raft.committed) != raft.term
