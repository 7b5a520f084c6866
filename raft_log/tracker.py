"""The leader's view of the group: membership, per-peer progress and the votes of an election."""

from __future__ import annotations

from raft_log import quorum
from raft_log.progress import Progress
from raft_log.types import ConfState, NodeId


class ProgressTracker:
    """Membership plus one `Progress` per member; answers the quorum questions."""

    def __init__(self, conf: ConfState, max_inflight: int) -> None:
        self.conf = conf
        self.max_inflight = max_inflight
        self.progress: dict[NodeId, Progress] = {}
        self.votes: dict[NodeId, bool] = {}
        self.set_conf(conf, next_index=1)

    @property
    def voters(self) -> tuple[NodeId, ...]:
        return self.conf.voters

    def is_voter(self, node: NodeId) -> bool:
        return node in self.conf.voters

    def set_conf(self, conf: ConfState, next_index: int) -> None:
        """Switch to `conf`: new members start probing at `next_index`, removed ones are forgotten."""
        self.conf = conf
        members = dict.fromkeys(conf.voters + conf.learners)  # ordered: a seed replays whatever the hash seed
        for node in list(self.progress):
            if node not in members:
                del self.progress[node]
        for node in members:
            is_learner = node in conf.learners
            if node in self.progress:
                self.progress[node].is_learner = is_learner
            else:
                fresh = Progress(next_index, self.max_inflight, is_learner)
                fresh.recent_active = True
                self.progress[node] = fresh

    def reset_progress(self, next_index: int) -> None:
        """Start every peer over from `next_index` (a new term)."""
        self.progress = {}
        self.set_conf(self.conf, next_index)

    def committed(self) -> int:
        """The highest index replicated on a majority of voters (a repairing one counts for none)."""
        match = {node: 0 if pr.repairing else pr.match for node, pr in self.progress.items()}
        return quorum.committed_index(self.conf.voters, match)

    def record_vote(self, node: NodeId, granted: bool) -> None:
        """Count a vote once (the first answer of each node wins)."""
        self.votes.setdefault(node, granted)

    def tally(self) -> quorum.VoteResult:
        return quorum.vote_result(self.conf.voters, self.votes)

    def reset_votes(self) -> None:
        self.votes = {}

    def quorum_active(self) -> bool:
        """Whether a majority of voters was heard from since the last reset."""
        active = [node for node, pr in self.progress.items() if pr.recent_active]
        return quorum.has_quorum(self.conf.voters, active)

    def reset_recent_active(self, self_id: NodeId) -> None:
        for node, pr in self.progress.items():
            pr.recent_active = node == self_id
