"""A replica that cannot read a committed entry halts there (issue 37, finding 8): it applies nothing of
that entry or after it, says so, and the other replicas go on. Skipping the entry, as before, let the
replica apply what followed on a state the others no longer had: it diverged without a word.

Nodes a and b stand for a later version: their replicas read queue operations of a version after this
one's (taking them for the current version). Node c runs this version's `QueueReplica`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import msgpack
from stepped_cluster import GROUP, SteppedCluster, publish_op

from cluster.queues.queue_replica import QueueReplica
from cluster.replication.entry_codec import QUEUE_OP_VERSION, entry_ops
from cluster.replication.proposals import ProposalFailed
from queue_state.effects import Enqueued
from raft_log.types import Entry

LATER_VERSION = QUEUE_OP_VERSION + 1


class LaterReplica(QueueReplica):
    """A replica of a later version: it reads LATER_VERSION operations too."""

    def apply(self, entry: Entry, awaited: bool = False) -> list[Any]:
        ops = [[QUEUE_OP_VERSION, *op[1:]] if op[0] == LATER_VERSION else op for op in entry_ops(entry.data)]
        return super().apply(replace(entry, data=msgpack.packb(ops)), awaited)


def later_op(body: bytes) -> list[Any]:
    return [LATER_VERSION, *publish_op(body)[1:]]


def _ids(replica: QueueReplica) -> list[int]:
    return [message.id for message in replica.machine.ready_messages()]


async def test_rule_a_replica_that_cannot_read_an_entry_halts_there_and_the_others_go_on(
    tmp_path: Path,
) -> None:
    cluster = SteppedCluster(tmp_path, replicas={"a": LaterReplica, "b": LaterReplica})
    try:
        cluster.elect("a")
        a = cluster.hosts["a"]
        futures = []
        for op in (publish_op(b"before"), later_op(b"later"), publish_op(b"after")):
            futures.append(a.submit(GROUP, op))
            cluster.settle()
        assert all(isinstance(future.result(), Enqueued) for future in futures)  # a and b committed
        unreadable_at = cluster.group("a").applied - 1
        assert _ids(cluster.replicas["a"]) == _ids(cluster.replicas["b"]) == [1, 2, 3]

        c = cluster.group("c")
        assert _ids(cluster.replicas["c"]) == [1]  # nothing of the unreadable entry, nothing after it
        assert c.applied == unreadable_at - 1
        assert c.halted is not None and c.halted.index == unreadable_at
        assert "not a queue operation" in c.halted.reason
        assert cluster.group("a").raft.status().progress["c"].match <= unreadable_at  # c acks no more

        cluster.restart("c")  # the same version again: it halts at the same entry
        cluster.settle()
        c = cluster.group("c")
        assert _ids(cluster.replicas["c"]) == [1] and c.halted is not None and c.halted.index == unreadable_at
    finally:
        cluster.close()


async def test_rule_a_halted_leader_answers_its_callers_and_the_others_elect_another(tmp_path: Path) -> None:
    """Leader a cannot read an entry it was handed to propose (as if written by a later version): it
    halts, answers what it awaited (the entry may have committed: outcome unknown), refuses new
    proposals, leads no more; b and c, which read it, elect one of them and go on."""
    cluster = SteppedCluster(tmp_path, replicas={"b": LaterReplica, "c": LaterReplica})
    try:
        cluster.elect("a")
        a = cluster.hosts["a"]
        unreadable = a.submit(GROUP, later_op(b"later"))
        cluster.settle()
        failure = unreadable.exception()
        assert isinstance(failure, ProposalFailed) and failure.outcome_unknown
        assert cluster.group("a").halted is not None and not cluster.replicas["a"].is_leader
        try:
            a.submit(GROUP, publish_op(b"refused"))
            raise AssertionError("a halted group took a proposal")
        except ProposalFailed as refused:
            assert "halted" in str(refused)

        cluster.until(lambda: any(cluster.group(n).raft.is_leader for n in ("b", "c")))
        leader = next(n for n in ("b", "c") if cluster.group(n).raft.is_leader)
        assert a.leader_of(GROUP) != "a"
        published = cluster.hosts[leader].submit(GROUP, publish_op(b"goes on"))
        cluster.settle()
        assert isinstance(published.result(), Enqueued)
        assert (
            _ids(cluster.replicas["b"]) == _ids(cluster.replicas["c"]) == [1, 2]
            and _ids(cluster.replicas["a"]) == []
        )
    finally:
        cluster.close()
