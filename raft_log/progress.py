"""What the leader knows about one follower's log, and how it paces sends to it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from raft_log.inflights import Inflights
from raft_log.types import Snapshot


class ProgressState(IntEnum):
    """PROBE: one append per round trip until the match point is found; REPLICATE: pipelined appends;
    SNAPSHOT: the follower needs a snapshot, appends pause until it is installed."""

    PROBE = 0
    REPLICATE = 1
    SNAPSHOT = 2


@dataclass(slots=True)
class SnapshotTransfer:
    """A chunked snapshot on its way to one follower."""

    snapshot: Snapshot
    acked_offset: int = 0
    sent_offset: int = 0
    all_sent: bool = False
    progressed: bool = True

    def rewind(self, offset: int) -> None:
        """Resend from `offset` (a chunk went missing)."""
        self.acked_offset = offset
        self.sent_offset = offset
        self.all_sent = False


class Progress:
    """Replication state of one peer, kept by the leader."""

    def __init__(self, next_index: int, max_inflight: int, is_learner: bool) -> None:
        self.match = 0
        self.next = next_index
        self.state = ProgressState.PROBE
        self.probe_sent = False
        self.inflights = Inflights(max_inflight)
        self.recent_active = False
        self.is_learner = is_learner
        self.transfer: SnapshotTransfer | None = None
        self.repairing = False  # the peer lost entries it acknowledged: counted for no commit until repaired

    def become_probe(self) -> None:
        """Find the match point again, one append at a time."""
        if self.state is ProgressState.SNAPSHOT and self.transfer is not None:
            self.next = max(self.match + 1, self.transfer.snapshot.meta.index + 1)
        else:
            self.next = self.match + 1
        self._enter(ProgressState.PROBE)

    def become_replicate(self) -> None:
        """The match point is known: stream appends optimistically."""
        self.next = self.match + 1
        self._enter(ProgressState.REPLICATE)

    def become_snapshot(self, snapshot: Snapshot) -> None:
        """The entries the follower needs are compacted: send `snapshot` instead."""
        self._enter(ProgressState.SNAPSHOT)
        self.transfer = SnapshotTransfer(snapshot)

    def _enter(self, state: ProgressState) -> None:
        self.state = state
        self.probe_sent = False
        self.inflights.reset()
        self.transfer = None

    def maybe_update(self, index: int) -> bool:
        """Record an ack for `index`; False when it is stale (no new match)."""
        self.next = max(self.next, index + 1)
        if index <= self.match:
            return False
        self.match = index
        self.probe_sent = False
        return True

    def maybe_decr_to(self, rejected: int, match_hint: int) -> bool:
        """Step `next` back after a rejection of the append at `rejected`; False when it is stale."""
        if self.state is ProgressState.REPLICATE:
            if rejected <= self.match:
                return False
            self.next = self.match + 1
            return True
        if self.next - 1 != rejected:
            return False
        self.next = max(min(rejected, match_hint + 1), self.match + 1)
        self.probe_sent = False
        return True

    def lost_entries(self, held: int) -> None:
        """The peer (repairing) holds matching entries only through `held`: find the match point again."""
        self.match = min(self.match, held)
        self._enter(ProgressState.PROBE)
        self.next = self.match + 1

    def sent_entries(self, last_sent: int | None) -> None:
        """Account for an append just sent (`last_sent` is its last entry's index, None if empty)."""
        if self.state is ProgressState.REPLICATE:
            if last_sent is not None:
                self.next = last_sent + 1
                self.inflights.add(last_sent)
        else:
            self.probe_sent = True

    def is_paused(self) -> bool:
        """Whether no append may be sent now."""
        if self.state is ProgressState.PROBE:
            return self.probe_sent
        if self.state is ProgressState.REPLICATE:
            return self.inflights.full()
        return True
