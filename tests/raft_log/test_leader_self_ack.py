"""The leader counts itself towards a commit only for entries it has durably written (finding 1 of #17).

A driver may send a leader's appends before the leader's own write (cluster/replication/raft_host.py does), so
an append must never carry a commit index that covers an entry only the leader holds, unwritten: a learner
would apply an entry that the leader loses on power failure.
"""

from __future__ import annotations

from raft_harness import Harness

from raft_log.confchange import ConfChange, ConfChangeKind
from raft_log.messages import MessageType
from raft_log.ready import persist_ready


def test_rule_a_single_voter_leader_reveals_no_commit_of_its_unwritten_entry() -> None:
    h = Harness(voters=("a",), learners=("b",))
    leader = h.elect("a")
    index = leader.propose(b"confirmed?")

    rd = leader.ready()  # what a driver may send before it has written rd.entries
    assert [e.index for e in rd.entries] == [index]
    assert all(m.commit < index for m in rd.messages), "an early append reveals an unwritten commit"
    assert index not in [e.index for e in rd.committed_entries]
    assert rd.hard_state is None or rd.hard_state.commit < index

    persist_ready(h.storages["a"], rd)
    leader.advance(rd)  # now durable: the leader counts itself, commits and tells the learner
    after = leader.ready()
    assert index in [e.index for e in after.committed_entries]
    appends = [m for m in after.messages if m.type is MessageType.APP and m.to == "b"]
    assert appends and appends[-1].commit == index


def test_rule_the_leaders_own_match_is_its_written_last_index() -> None:
    h = Harness(voters=("a",), learners=("b",))
    h.elect("a")
    stable = h["a"].status().last_index
    leader = h["a"]
    leader.propose(b"one")
    rd = leader.ready()
    assert leader.status().progress["a"].match == stable
    persist_ready(h.storages["a"], rd)
    leader.advance(rd)
    assert leader.status().progress["a"].match == stable + 1


def test_three_voters_commit_on_two_followers_while_the_leader_still_writes() -> None:
    """Counting the leader late costs nothing when a majority of followers has the entry."""
    h = Harness()
    leader = h.elect("a")
    index = leader.propose(b"x")
    rd = leader.ready()
    for message in rd.messages:  # sent early; the leader's write has not finished
        h.deliver(message)
    for follower in ("b", "c"):
        for message in h.process(follower):
            h.outbox.remove(message)
            h.deliver(message)
    assert leader.status().commit == index


def test_rule_an_entry_appended_while_a_write_runs_is_counted_only_once_written() -> None:
    """`propose_conf_change` (like a leader's no-op) appends straight into the core while the driver writes
    the previous Ready: `advance` of that Ready must not count the newer, unwritten entry."""
    h = Harness(voters=("a",), learners=("b",))
    leader = h.elect("a")
    first = leader.propose(b"one")
    rd = leader.ready()  # being written
    change = leader.propose_conf_change(ConfChange(ConfChangeKind.PROMOTE, "b"))
    assert change == first + 1
    persist_ready(h.storages["a"], rd)
    leader.advance(rd)
    assert leader.status().commit == first
    after = leader.ready()
    assert [e.index for e in after.entries] == [change]  # now to be written
    assert all(m.commit < change for m in after.messages), "an append reveals a commit of an unwritten entry"
    assert change not in [e.index for e in after.committed_entries]
