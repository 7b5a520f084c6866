"""Quiescence: a leader with nothing in flight goes quiet with its followers, ticks count for nothing
while quiet, and any input but the followers' answers wakes the group (docs/internals/raft.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from raft_harness import Harness

from raft_log.core import QUIESCE
from raft_log.messages import MessageType
from raft_log.ready import Role
from raft_log.types import Repair


def _quiet_group() -> Harness:
    """Three voters, `a` leading, one entry committed everywhere, then quiesced."""
    h = Harness()
    a = h.elect("a")
    a.propose(b"x")
    h.stabilize()
    h.tick_all(1)  # a round of heartbeats: every follower has acknowledged everything
    assert a.can_quiesce()
    a.quiesce()
    h.stabilize()
    return h


def test_leader_with_everything_matched_quiesces_and_followers_follow() -> None:
    h = _quiet_group()
    assert all(h[node].quiet for node in "abc")


def test_ticks_count_for_nothing_while_quiet() -> None:
    """Far past any election timeout, no follower campaigns and the leader neither beats nor steps down."""
    h = _quiet_group()
    for _ in range(100):
        for node in "abc":
            h[node].tick()
        assert not any(h[node].has_ready() for node in "abc")
    assert h["a"].role is Role.LEADER
    assert h["b"].leader == "a" and h["c"].leader == "a"


def test_leader_with_an_unmatched_follower_cannot_quiesce() -> None:
    h = Harness()
    a = h.elect("a")
    h.isolated.add("c")
    a.propose(b"x")
    h.stabilize()
    assert not a.can_quiesce()
    with pytest.raises(ValueError):
        a.quiesce()


def test_leader_with_an_unapplied_entry_cannot_quiesce() -> None:
    h = Harness()
    a = h.elect("a")
    a.propose(b"x")
    assert not a.can_quiesce()  # neither written nor committed nor applied yet


def test_a_proposal_wakes_the_leader_and_its_appends_wake_the_followers() -> None:
    h = _quiet_group()
    h["a"].propose(b"y")
    assert not h["a"].quiet
    h.stabilize()
    assert not h["b"].quiet and not h["c"].quiet
    assert h.data_applied("b")[-1] == b"y"


def test_the_leaders_answers_keep_it_quiet() -> None:
    """The followers' heartbeat answers to the quiescing beat arrive after the leader went quiet."""
    h = Harness()
    a = h.elect("a")
    h.tick_all(1)
    a.quiesce()
    for message in h.take(MessageType.HEARTBEAT):
        assert message.context == QUIESCE
        h.deliver(message)
    answers = h.take(MessageType.HEARTBEAT_RESP)
    assert len(answers) == 2
    for message in answers:
        h.deliver(message)
    assert a.quiet and not a.has_ready()


def test_a_follower_missing_the_commit_stays_awake_and_its_campaign_wakes_the_leader() -> None:
    """A follower that does not hold what the leader commits stays awake; when its election timer fires,
    its pre-vote wakes the quiet leader (which ignores it, being in its lease) and the leader's beats
    settle the follower again."""
    h = Harness()
    a = h.elect("a")
    h.tick_all(1)
    a.quiesce()
    for message in h.take(MessageType.HEARTBEAT):
        if message.to != "c":  # c never hears the quiescing beat
            h.deliver(message)
    h.stabilize()
    assert h["b"].quiet and not h["c"].quiet
    for _ in range(30):
        h["c"].tick()
        h.stabilize()
        if not a.quiet:
            break
    assert not a.quiet and a.role is Role.LEADER
    h.tick_all(2)
    assert h["c"].leader == "a" and h["c"].role is Role.FOLLOWER


def test_a_wake_gives_a_follower_a_whole_election_timeout_then_it_elects() -> None:
    """What the driver does when the leader's node falls silent: followers wake, and elect another."""
    h = _quiet_group()
    h.isolated.add("a")
    h["b"].wake()
    h["c"].wake()
    for _ in range(40):
        h.tick_all(1)
        if h["b"].is_leader or h["c"].is_leader:
            break
    assert h["b"].is_leader or h["c"].is_leader


def test_a_woken_leader_checks_its_quorum_afresh() -> None:
    """A quiet leader cut off from its followers, once woken, steps down within two election timeouts."""
    h = _quiet_group()
    h.isolated.update("bc")
    h["a"].wake()
    h.tick_all(2 * 10)
    assert h["a"].role is Role.FOLLOWER


def test_a_vote_request_wakes_a_quiet_follower() -> None:
    h = _quiet_group()
    h.isolated.add("a")
    h["c"].wake()
    h["c"].campaign()
    h.stabilize()
    assert not h["b"].quiet


def test_a_follower_woken_by_the_driver_rests_only_if_it_took_no_message_since() -> None:
    """`rest`: the driver woke followers for a leader it thought gone and hears again."""
    h = _quiet_group()
    for node in "abc":
        h[node].wake()
    assert not h["a"].rest()  # a leader never rests: it goes quiet by `quiesce`
    h.tick_all(2)  # a's heartbeats reach b and c
    assert not h["b"].rest() and not h["c"].rest()
    h = _quiet_group()
    h["b"].wake()
    h["b"].tick()
    assert h["b"].rest() and h["b"].quiet and h["b"].leader == "a"
    assert not h["b"].rest()  # already quiet
    h["c"].wake()
    h["c"].campaign()
    assert not h["c"].rest()  # a candidate follows no leader


def test_rule_a_follower_woken_by_a_message_does_not_rest() -> None:
    """Only the driver's `wake` marks a follower that may rest: a vote request that woke it says the
    group may be moving on."""
    h = _quiet_group()
    h.isolated.add("a")
    h["c"].wake()
    h["c"].campaign()
    h.stabilize()
    assert not h["b"].quiet and not h["b"].rest()


def _restarted(h: Harness, node: str) -> None:
    """`node` starts again on its storage (which keeps its hard state, commit index included)."""
    h.add(node, h.storages[node], applied=h[node].committed)


def test_rule_a_restarted_follower_that_committed_all_it_holds_follows_its_terms_leader_quietly() -> None:
    """`follow_quietly`: the driver heard `a` announce it leads in b's own term; b committed everything it
    holds, so nothing a quiescing heartbeat would bring is missing. It follows `a` and stays quiet for
    any number of ticks, sending nothing (before, every restarted replica stood for election after a
    timeout, and its pre-vote woke the quiet leader)."""
    h = _quiet_group()
    term = h["a"].term
    _restarted(h, "b")
    assert h["b"].leader is None and not h["b"].quiet
    assert h["b"].follow_quietly("a", term)
    assert h["b"].quiet and h["b"].leader == "a" and h["b"].role is Role.FOLLOWER
    for _ in range(100):
        h["b"].tick()
    h.process("b")
    assert not h.take()  # no campaign, no message at all
    assert not h["b"].follow_quietly("a", term)  # already quiet


def test_rule_follow_quietly_only_a_voter_announced_for_the_replicas_own_term() -> None:
    h = _quiet_group()
    term = h["a"].term
    _restarted(h, "b")
    assert not h["b"].follow_quietly("a", term + 1)  # a newer term: this replica would have to move to it
    assert not h["b"].follow_quietly("a", term - 1)
    assert not h["b"].follow_quietly("b", term)  # itself
    assert not h["b"].follow_quietly("z", term)  # not a voter
    h["b"].campaign()
    assert not h["b"].follow_quietly("a", term)  # a (pre-)candidate follows no one


def test_rule_a_restarted_follower_missing_its_commit_index_does_not_follow_quietly() -> None:
    """A commit index is not synced: a replica whose log holds entries beyond what it knows committed
    would stay behind the quiet leader for as long as the group is idle (whole-node seed 2, with a
    power loss). It stays awake; its campaign wakes the leader, whose beats bring the commit index."""
    h = _quiet_group()
    term = h["a"].term
    storage = h.storages["b"]
    hard_state, _ = storage.initial_state()
    storage.set_hard_state(replace(hard_state, commit=hard_state.commit - 1))
    h.add("b", storage, applied=hard_state.commit - 1)
    assert not h["b"].follow_quietly("a", term)
    assert not h["b"].quiet


def test_hand_over_asks_the_most_caught_up_voter_among_those_given() -> None:
    h = Harness()
    a = h.elect("a")
    h.isolated.add("c")
    a.propose(b"x")
    h.stabilize()  # b matches a's log, c does not
    assert a.hand_over(["c", "b"]) == "b"
    h.isolated.clear()
    h.stabilize()
    assert h["b"].is_leader and not a.is_leader


def test_hand_over_asks_no_one_without_another_voter_given() -> None:
    h = Harness()
    a = h.elect("a")
    assert a.hand_over(["a", "z"]) is None
    assert a.hand_over([]) is None
    h.stabilize()
    assert a.is_leader


def test_rule_a_repairing_replica_does_not_follow_quietly() -> None:
    """A repair ends only on what a leader of the group sends (its commit covering what the replica
    lost): an announcement heard from another node must not end it, or the replica would vote again with
    its vote in that term unknown (reviewer's finding 3)."""
    h = _quiet_group()
    term = h["a"].term
    last = h["b"].status().last_index
    h.add(
        "b",
        h.storages["b"],
        applied=h["b"].committed,
        repair=Repair("hard state unreadable", None, last, last),
    )
    assert not h["b"].follow_quietly("a", term)
    assert h["b"].repair is not None and not h["b"].quiet


def test_rule_a_quiet_leader_reminds_a_restarted_member_of_its_commit_and_stays_quiet() -> None:
    """A member restarted knowing less committed than it holds (the commit index is not synced), and
    unable to stand for election (a learner, or a voter whose configuration does not say so yet), would
    wait for the group's next write: nothing it does wakes the quiet leader (whole-node seed 20001239).
    The leader's driver, hearing it back, has the leader send its quiescing heartbeat again."""
    h = _quiet_group()
    storage = h.storages["c"]
    hard_state, _ = storage.initial_state()
    storage.set_hard_state(replace(hard_state, commit=hard_state.commit - 1))
    h.add("c", storage, applied=hard_state.commit - 1)
    assert h["c"].committed < h["a"].committed and not h["c"].quiet
    assert h["a"].remind("c")
    assert not h["b"].remind("c")  # only a quiet leader reminds
    h.stabilize()
    assert h["c"].committed == h["a"].committed and h["c"].quiet and h["c"].leader == "a"
    assert h["a"].quiet
