"""The Raft paper's rules, one test per rule, named after the section that states it.

Sections: 5.1 terms, 5.2 leader election, 5.3 log replication, 5.4 safety, 6 membership changes,
7 log compaction; then the extensions of the thesis: PreVote, CheckQuorum, leadership transfer,
ReadIndex, learners, flow control and stale responses.
"""

from __future__ import annotations

import random

import pytest
from raft_harness import Harness

from raft_log.confchange import ConfChange, ConfChangeKind
from raft_log.core import Config, RaftNode
from raft_log.errors import (
    ConfChangeInProgressError,
    InvalidConfChangeError,
    NotLeaderError,
    ProposalDroppedError,
)
from raft_log.messages import Message, MessageType
from raft_log.progress import ProgressState
from raft_log.ready import Role
from raft_log.storage.memory_storage import MemoryStorage
from raft_log.types import ConfState, Entry, HardState, SnapshotMeta

ABC = ConfState(voters=("a", "b", "c"))


def make_node(
    node_id: str = "a", conf: ConfState = ABC, entries: list[Entry] | None = None, **cfg
) -> RaftNode:
    """A lone node with a pre-filled persisted log (as if it had lived before)."""
    storage = MemoryStorage(conf)
    if entries:
        storage.append(entries)
        storage.set_hard_state(HardState(term=entries[-1].term))
    return RaftNode(Config(node_id="a", group="g", **cfg), storage, random.Random(1))  # type: ignore[arg-type]


def message(kind: MessageType, frm: str, to: str = "a", **fields) -> Message:
    return Message(type=kind, group="g", frm=frm, to=to, **fields)


def sent(node: RaftNode, kind: MessageType | None = None) -> list[Message]:
    rd = node.ready()
    node.advance(rd)
    return [m for m in rd.messages if kind is None or m.type is kind]


def log_of(h: Harness, node: str) -> list[tuple[int, int]]:
    raft = h[node]
    return [(i, raft.entry_term(i)) for i in range(1, raft.status().last_index + 1)]


# ---------------------------------------------------------------- 5.1 terms


@pytest.mark.parametrize("role", [Role.FOLLOWER, Role.CANDIDATE, Role.LEADER])
def test_5_1_any_role_adopts_a_higher_term_and_becomes_follower(role: Role) -> None:
    node = make_node(conf=ConfState(voters=("a",)) if role is Role.LEADER else ABC, pre_vote=False)
    if role is not Role.FOLLOWER:
        node.campaign()
    assert node.role is role
    node.step(message(MessageType.APP, "b", term=9, index=0, log_term=0))
    assert (node.role, node.term, node.leader) == (Role.FOLLOWER, 9, "b")


def test_5_1_message_with_a_stale_term_is_refused_and_answered_with_the_current_term() -> None:
    node = make_node(entries=[Entry(1, 3)])
    node.step(message(MessageType.APP, "b", term=2, index=1, log_term=3, entries=(Entry(2, 2),)))
    (reply,) = sent(node, MessageType.APP_RESP)
    assert reply.term == 3
    assert node.status().last_index == 1


# ---------------------------------------------------------------- 5.2 leader election


def test_5_2_follower_campaigns_after_a_randomized_timeout_in_one_to_two_election_ticks() -> None:
    for seed in range(20):
        storage = MemoryStorage(ABC)
        node = RaftNode(Config("a", "g", election_tick=10, pre_vote=False), storage, random.Random(seed))
        ticks = 0
        while node.role is Role.FOLLOWER:
            node.tick()
            ticks += 1
        assert 10 <= ticks < 20
        assert node.role is Role.CANDIDATE and node.term == 1


def test_5_2_election_timeouts_differ_between_seeds() -> None:
    timeouts = set()
    for seed in range(10):
        node = RaftNode(Config("a", "g", pre_vote=False), MemoryStorage(ABC), random.Random(seed))
        ticks = 0
        while node.role is Role.FOLLOWER:
            node.tick()
            ticks += 1
        timeouts.add(ticks)
    assert len(timeouts) > 1


def test_5_2_candidate_votes_for_itself_and_asks_every_other_voter() -> None:
    node = make_node(pre_vote=False)
    node.campaign()
    votes = sent(node, MessageType.VOTE)
    assert sorted(m.to for m in votes) == ["b", "c"]
    assert node.ready().hard_state is None  # already taken: vote persisted in the previous Ready
    assert node.status().term == 1


def test_5_2_candidate_with_a_majority_of_votes_becomes_leader() -> None:
    h = Harness(pre_vote=False)
    h.elect("a")
    assert h["b"].leader == "a" and h["c"].leader == "a"


def test_5_2_node_grants_at_most_one_vote_per_term() -> None:
    node = make_node(pre_vote=False, check_quorum=False)
    node.step(message(MessageType.VOTE, "b", term=1))
    node.step(message(MessageType.VOTE, "c", term=1))
    replies = sent(node, MessageType.VOTE_RESP)
    assert [(m.to, m.reject) for m in replies] == [("b", False), ("c", True)]
    node.step(message(MessageType.VOTE, "b", term=1))  # the same candidate asking again is granted
    assert not sent(node, MessageType.VOTE_RESP)[0].reject


def test_5_2_candidate_that_hears_from_a_leader_of_its_term_becomes_follower() -> None:
    node = make_node(pre_vote=False)
    node.campaign()
    node.step(message(MessageType.APP, "b", term=1, index=0, log_term=0))
    assert (node.role, node.leader) == (Role.FOLLOWER, "b")


def test_5_2_candidate_that_loses_the_vote_returns_to_follower() -> None:
    node = make_node(pre_vote=False)
    node.campaign()
    node.step(message(MessageType.VOTE_RESP, "b", term=1, reject=True))
    node.step(message(MessageType.VOTE_RESP, "c", term=1, reject=True))
    assert node.role is Role.FOLLOWER


# ---------------------------------------------------------------- 5.3 log replication


def test_5_3_new_leader_appends_an_empty_entry_of_its_term() -> None:
    h = Harness()
    h.elect("a")
    assert h.applied["b"] == [Entry(1, 1)]


def test_5_3_leader_commits_an_entry_once_a_majority_stored_it() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.add("c")
    index = h["a"].propose(b"x")
    h.stabilize()
    assert h["a"].status().commit == index
    assert h.data_applied("a") == [b"x"] and h.data_applied("c") == []


def test_5_3_leader_without_a_majority_does_not_commit() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.update({"b", "c"})
    index = h["a"].propose(b"x")
    h.stabilize()
    assert h["a"].status().commit < index


def test_5_3_follower_refuses_an_append_whose_previous_entry_does_not_match() -> None:
    node = make_node(entries=[Entry(1, 1), Entry(2, 1)])
    node.step(message(MessageType.APP, "b", term=2, index=2, log_term=2, entries=(Entry(3, 2),)))
    (reply,) = sent(node, MessageType.APP_RESP)
    assert reply.reject and reply.index == 2
    assert node.status().last_index == 2


def test_5_3_follower_replaces_entries_from_the_first_term_conflict_only() -> None:
    node = make_node(entries=[Entry(1, 1), Entry(2, 1), Entry(3, 1)])
    node.step(message(MessageType.APP, "b", term=2, index=1, log_term=1, entries=(Entry(2, 1), Entry(3, 2))))
    assert [node.entry_term(i) for i in (1, 2, 3)] == [1, 1, 2]
    (reply,) = sent(node, MessageType.APP_RESP)
    assert not reply.reject and reply.index == 3


def test_5_3_log_matching_repairs_divergent_followers_figure_7() -> None:
    """Followers with missing, extra and conflicting entries all end up with the leader's log."""
    leader_log = [Entry(i, t) for i, t in enumerate([1, 1, 1, 4, 4, 5, 5, 6, 6, 6], start=1)]
    follower_logs = {
        "b": leader_log[:9],  # missing one entry
        "c": leader_log[:4],  # missing many
        "d": [*leader_log, Entry(11, 6)],  # an extra uncommitted entry
        "e": [Entry(i, t) for i, t in enumerate([1, 1, 1, 4, 4, 4, 4], start=1)],  # conflicting tail
        "f": [Entry(i, t) for i, t in enumerate([1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3], start=1)],
    }
    voters = ("a", *follower_logs)
    h = Harness(voters=voters, pre_vote=False, check_quorum=False)
    for node, entries in {"a": leader_log, **follower_logs}.items():
        storage = MemoryStorage(ConfState(voters=voters))
        storage.append(entries)
        storage.set_hard_state(HardState(term=7 if node == "a" else 6))
        h.add(node, storage)
    h.elect("a")
    h["a"].propose(b"after")
    h.stabilize()
    for node in follower_logs:
        assert log_of(h, node) == log_of(h, "a"), node


def test_5_3_rejection_hint_skips_a_whole_conflicting_term() -> None:
    node = make_node(entries=[Entry(1, 1)] + [Entry(i, 2) for i in range(2, 10)])
    node.step(message(MessageType.APP, "b", term=5, index=9, log_term=4))
    (reply,) = sent(node, MessageType.APP_RESP)
    assert reply.reject and (reply.reject_hint, reply.log_term) == (9, 2)
    node.step(message(MessageType.APP, "b", term=5, index=9, log_term=1))
    (reply,) = sent(node, MessageType.APP_RESP)
    assert (reply.reject_hint, reply.log_term) == (1, 1)


# ---------------------------------------------------------------- 5.4 safety


def test_5_4_1_voter_refuses_a_candidate_whose_log_is_less_up_to_date() -> None:
    node = make_node(entries=[Entry(1, 1), Entry(2, 2)], pre_vote=False, check_quorum=False)
    node.step(message(MessageType.VOTE, "b", term=3, index=5, log_term=1))
    node.step(message(MessageType.VOTE, "c", term=4, index=1, log_term=2))
    assert all(m.reject for m in sent(node, MessageType.VOTE_RESP))
    node.step(message(MessageType.VOTE, "c", term=5, index=2, log_term=2))
    assert not sent(node, MessageType.VOTE_RESP)[0].reject


def test_5_4_1_follower_missing_a_committed_entry_cannot_be_elected() -> None:
    h = Harness(pre_vote=False, check_quorum=False)
    h.elect("a")
    h.isolated.add("c")
    h["a"].propose(b"committed")
    h.stabilize()
    h.isolated.clear()
    h.dropped.append(lambda m: m.frm == "a" or m.to == "a")
    h["c"].campaign()
    h.stabilize()
    assert not h["c"].is_leader


def test_5_4_2_leader_never_commits_an_entry_of_an_earlier_term_by_counting_figure_8() -> None:
    """A leader of term 3 finds an entry of term 2 on a majority; it commits only with its own entry."""
    voters = ("a", "b", "c")
    h = Harness(voters=voters, pre_vote=False, check_quorum=False)
    old = [Entry(1, 1), Entry(2, 2)]
    for node, entries in {"a": old, "b": old, "c": old[:1]}.items():
        storage = MemoryStorage(ConfState(voters=voters))
        storage.append(entries)
        storage.set_hard_state(HardState(term=2, commit=1))
        h.add(node, storage)
    h.dropped.append(lambda m: m.type is MessageType.APP and m.entries != ())  # the no-op is held back
    h.elect("a")
    h["a"].step(message(MessageType.APP_RESP, "b", term=3, index=2))  # b holds entry 2 (term 2)
    assert h["a"].status().progress["b"].match == 2
    assert h["a"].status().commit == 1  # a majority holds entry 2, but it is from term 2
    h.dropped.clear()
    h.tick_all()  # the no-op of term 3 replicates, committing entry 2 with it
    assert h["a"].status().commit == 3


# ---------------------------------------------------------------- 6 membership changes


def test_6_membership_change_takes_effect_when_it_commits() -> None:
    h = Harness()
    h.elect("a")
    h.add("d", MemoryStorage())
    h.isolated.update({"b", "c"})
    h["a"].propose_conf_change(ConfChange(ConfChangeKind.ADD_VOTER, "d"))
    h.stabilize()
    assert "d" not in h["a"].status().conf.voters
    h.isolated.clear()
    h.tick_all()
    assert h["a"].status().conf.voters == ("a", "b", "c", "d")
    assert h.storages["d"].initial_state()[1].voters == ("a", "b", "c", "d")


def test_6_second_membership_change_is_refused_while_the_first_is_uncommitted() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.update({"b", "c"})
    h["a"].propose_conf_change(ConfChange(ConfChangeKind.ADD_LEARNER, "d"))
    with pytest.raises(ConfChangeInProgressError):
        h["a"].propose_conf_change(ConfChange(ConfChangeKind.ADD_LEARNER, "e"))


def test_6_no_membership_change_before_the_leader_commits_in_its_term() -> None:
    h = Harness()
    h.isolated.update({"b", "c"})
    h["a"].campaign()
    h["a"].step(message(MessageType.PRE_VOTE_RESP, "b", term=1))
    h["a"].step(message(MessageType.VOTE_RESP, "b", term=1))
    assert h["a"].is_leader
    with pytest.raises(ConfChangeInProgressError):
        h["a"].propose_conf_change(ConfChange(ConfChangeKind.ADD_LEARNER, "d"))


def test_6_invalid_membership_change_is_refused() -> None:
    h = Harness()
    h.elect("a")
    with pytest.raises(InvalidConfChangeError):
        h["a"].propose_conf_change(ConfChange(ConfChangeKind.ADD_VOTER, "b"))
    with pytest.raises(InvalidConfChangeError):
        h["a"].propose_conf_change(ConfChange(ConfChangeKind.PROMOTE, "b"))


def test_6_removed_leader_hands_over_and_steps_down() -> None:
    h = Harness()
    h.elect("a")
    h["a"].propose_conf_change(ConfChange(ConfChangeKind.REMOVE, "a"))
    h.stabilize()
    assert not h["a"].is_leader
    assert any(h[n].is_leader for n in ("b", "c"))
    with pytest.raises(NotLeaderError):
        h["a"].propose(b"x")


def test_6_new_replica_starts_empty_catches_up_as_learner_and_votes_once_promoted() -> None:
    h = Harness()
    h.elect("a")
    h["a"].propose(b"before")
    h.stabilize()
    h.add("d", MemoryStorage())
    assert h["d"].status().conf == ConfState()
    h["a"].propose_conf_change(ConfChange(ConfChangeKind.ADD_LEARNER, "d"))
    h.stabilize()
    assert h.data_applied("d")[:1] == [b"before"]
    assert h["d"].status().conf.learners == ("d",)
    h["a"].propose_conf_change(ConfChange(ConfChangeKind.PROMOTE, "d"))
    h.stabilize()
    assert h["a"].status().conf.voters == ("a", "b", "c", "d")
    h.isolated.update({"b", "c"})
    index = h["a"].propose(b"needs d")
    h.stabilize()
    assert h["a"].status().commit < index  # 2 of 4 is not a majority
    h.isolated.discard("b")
    h.stabilize()
    h.tick_all()
    assert h["a"].status().commit >= index


@pytest.mark.parametrize("cut_off", [False, True])
def test_rule_a_removed_member_learns_that_its_removal_committed(cut_off: bool) -> None:
    """The leader stops replicating to a member once its removal commits, so the removed replica would
    never learn it (and its node could never tell its removal from a stale list of members): the leader
    sends it the entries through the removal with the commit, and, for one cut off meanwhile, answers
    its requests for votes the same way (never counting them, nor letting them disturb the group)."""
    h = Harness()
    h.elect("a")
    term = h["a"].term
    if cut_off:
        h.isolated.add("c")
    h["a"].propose_conf_change(ConfChange(ConfChangeKind.REMOVE, "c"))
    h.stabilize()
    assert h["a"].status().conf.voters == ("a", "b")
    h.isolated.clear()
    for _ in range(3 * h["c"].config.election_tick):
        h.tick_all()
    assert h["c"].status().conf.voters == ("a", "b")
    assert h["a"].is_leader and h["a"].term == term


@pytest.mark.parametrize("pre_vote", [True, False])
def test_rule_an_unconfigured_replica_refuses_votes_and_pre_votes(pre_vote: bool) -> None:
    """A replica that holds no membership yet (created again, empty, waiting for the leader to add it)
    holds nothing it could vouch for: its vote, taken for the old replica's, would elect a candidate
    missing entries the old replica acknowledged."""
    h = Harness(pre_vote=pre_vote)
    h.elect("a")
    h.isolated.add("c")
    h["a"].propose(b"acknowledged by a and b")
    h.stabilize()
    h.add("b", MemoryStorage())  # b's replica lost and created again, unconfigured
    h.isolated = {"a"}  # a is lost for good; c comes back
    h["c"].campaign()
    h.stabilize()
    assert not h["c"].is_leader
    for kind in (MessageType.PRE_VOTE, MessageType.VOTE):
        h["b"].step(message(kind, "c", to="b", term=h["c"].term + 1))
    assert all(m.reject for m in h.take() if m.frm == "b")


def test_6_learner_receives_the_log_but_never_counts_or_votes() -> None:
    h = Harness(voters=("a", "b", "c"), learners=("l",))
    h.elect("a")
    h.isolated.update({"b", "c"})
    index = h["a"].propose(b"x")
    h.stabilize()
    assert h["a"].status().commit < index  # the learner's ack does not count
    assert h["l"].status().last_index == index
    for _ in range(50):
        h["l"].tick()
    assert h["l"].role is Role.FOLLOWER  # a learner never campaigns
    assert h["l"].status().progress == {}


# ---------------------------------------------------------------- 7 log compaction (snapshots)


def lagging_follower_after_compaction(chunk: int = 4) -> Harness:
    h = Harness(max_snapshot_chunk=chunk)
    h.elect("a")
    h.isolated.add("c")
    for i in range(5):
        h["a"].propose(f"e{i}".encode())
    h.stabilize()
    storage = h.storages["a"]
    applied = h["a"].status().applied
    storage.create_snapshot(applied, ABC, b"state-of-a-up-to-" + str(applied).encode())
    storage.compact(applied)
    h.isolated.clear()
    return h


def test_7_lagging_follower_installs_a_snapshot_sent_in_chunks() -> None:
    h = lagging_follower_after_compaction()
    h.tick_all()
    snap = h.storages["c"].snapshot()
    assert snap.data.startswith(b"state-of-a")
    assert h["c"].status().commit == h["a"].status().commit
    h["a"].propose(b"after")
    h.stabilize()
    assert h.data_applied("c") == [b"after"]


def test_7_snapshot_chunk_lost_on_the_way_is_sent_again() -> None:
    h = lagging_follower_after_compaction()
    lost = []

    def drop_second_chunk(m: Message) -> bool:
        if m.type is MessageType.SNAP and m.chunk_offset == 4 and not lost:
            lost.append(m)
            return True
        return False

    h.dropped.append(drop_second_chunk)
    h.tick_all(3)
    assert lost
    assert h.storages["c"].snapshot().data.startswith(b"state-of-a")


def test_7_snapshot_older_than_the_follower_commit_is_ignored() -> None:
    node = make_node(entries=[Entry(1, 1), Entry(2, 1), Entry(3, 1)])
    node.step(message(MessageType.HEARTBEAT, "b", term=1, commit=3))
    sent(node)
    node.step(
        message(
            MessageType.SNAP, "b", term=1, snapshot=SnapshotMeta(2, 1, ABC), chunk_data=b"x", chunk_done=True
        )
    )
    rd = node.ready()
    assert rd.snapshot is None
    (reply,) = [m for m in rd.messages if m.type is MessageType.APP_RESP]
    assert reply.index == 3


# ---------------------------------------------------------------- PreVote and CheckQuorum (thesis 9.6)


def test_prevote_partitioned_node_cannot_disrupt_a_healthy_leader() -> None:
    h = Harness()
    h.elect("a")
    term = h["a"].term
    h.isolated.add("c")
    for _ in range(100):
        h["c"].tick()
        h.stabilize()
    assert h["c"].term == term  # pre-votes failed, so the term never grew
    h.isolated.clear()
    h.tick_all(5)
    assert h["a"].is_leader and h["a"].term == term


def test_prevote_is_won_before_the_term_grows() -> None:
    node = make_node()
    node.campaign()
    assert (node.role, node.term) == (Role.PRE_CANDIDATE, 0)
    requests = sent(node, MessageType.PRE_VOTE)
    assert {m.term for m in requests} == {1}
    node.step(message(MessageType.PRE_VOTE_RESP, "b", term=1))
    assert (node.role, node.term) == (Role.CANDIDATE, 1)


def test_check_quorum_voter_ignores_vote_requests_while_it_hears_from_a_leader() -> None:
    h = Harness(pre_vote=False)
    h.elect("a")
    h["b"].step(message(MessageType.VOTE, "c", to="b", term=5, index=99, log_term=99))
    assert h["b"].term == 1 and h["b"].leader == "a"


def test_check_quorum_leader_without_a_majority_steps_down_within_two_election_ticks() -> None:
    h = Harness(election_tick=10)
    h.elect("a")
    h.isolated.update({"b", "c"})
    for _ in range(20):
        h["a"].tick()
    assert h["a"].role is Role.FOLLOWER


def test_check_quorum_leader_with_a_majority_stays() -> None:
    h = Harness(election_tick=10)
    h.elect("a")
    h.isolated.add("c")
    for _ in range(60):
        h["a"].tick()
        h["b"].tick()
        h.stabilize()
    assert h["a"].is_leader


# ---------------------------------------------------------------- leadership transfer (thesis 3.10)


def test_transfer_to_a_caught_up_follower_makes_it_leader() -> None:
    h = Harness()
    h.elect("a")
    h["a"].transfer_leadership("b")
    h.stabilize()
    assert h["b"].is_leader and h["a"].leader == "b"


def test_transfer_first_catches_the_target_up() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.add("c")
    h["a"].propose(b"x")
    h.stabilize()
    h.isolated.clear()
    h["a"].transfer_leadership("c")
    h.stabilize()
    assert h["c"].is_leader
    assert h.data_applied("c") == [b"x"]


def test_transfer_refuses_proposals_meanwhile_and_aborts_after_an_election_timeout() -> None:
    h = Harness(election_tick=10)
    h.elect("a")
    h.isolated.add("c")
    h["a"].transfer_leadership("c")
    with pytest.raises(ProposalDroppedError):
        h["a"].propose(b"x")
    for _ in range(10):
        h["a"].tick()
        h["b"].tick()
        h.stabilize()
    assert h["a"].is_leader
    assert h["a"].propose(b"x") > 0


def test_transfer_target_skips_prevote_and_the_leader_lease() -> None:
    h = Harness()
    h.elect("a")
    h["a"].transfer_leadership("b")
    timeout_now = h.take(MessageType.TIMEOUT_NOW)
    assert [m.to for m in timeout_now] == ["b"]
    h.deliver(timeout_now[0])
    assert h["b"].role is Role.CANDIDATE  # no pre-vote round
    h.stabilize()
    assert h["b"].is_leader  # "c" granted although it had just heard from "a"


# ---------------------------------------------------------------- ReadIndex (thesis 6.4)


def test_read_index_is_answered_after_a_heartbeat_round_with_the_commit_index() -> None:
    h = Harness()
    h.elect("a")
    h["a"].propose(b"x")
    h.stabilize()
    commit = h["a"].status().commit
    h["a"].read_index(b"r1")
    assert h.read_states["a"] == []
    h.stabilize()
    assert [(r.context, r.index) for r in h.read_states["a"]] == [(b"r1", commit)]


def test_read_index_is_not_answered_by_a_leader_cut_off_from_its_majority() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.update({"b", "c"})
    h["a"].read_index(b"r1")
    h.stabilize()
    assert h.read_states["a"] == []


def test_read_index_on_a_follower_is_forwarded_to_the_leader() -> None:
    h = Harness()
    h.elect("a")
    h["b"].read_index(b"r2")
    h.stabilize()
    assert [(r.context, r.index) for r in h.read_states["b"]] == [(b"r2", h["a"].status().commit)]


def test_read_index_waits_until_the_new_leader_commits_in_its_term() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.update({"b", "c"})
    h["a"].step(message(MessageType.APP, "b", term=2, index=1, log_term=1))  # deposed by b's term 2
    h.isolated.clear()
    h.stabilize()
    h["a"].campaign()
    h.dropped.append(lambda m: m.type is MessageType.APP)
    h.stabilize()
    assert h["a"].is_leader
    h["a"].read_index(b"r3")
    h.stabilize()
    assert h.read_states["a"] == []
    h.dropped.clear()
    h.tick_all()
    assert [r.context for r in h.read_states["a"]] == [b"r3"]


def test_read_index_without_a_leader_raises() -> None:
    with pytest.raises(NotLeaderError):
        make_node().read_index(b"r")


# ---------------------------------------------------------------- flow control and batching


def test_flow_control_caps_unacknowledged_appends_per_follower() -> None:
    h = Harness(max_inflight_msgs=3, max_size_per_msg=1)
    h.elect("a")
    h.take()
    for i in range(10):
        h["a"].propose(f"p{i}".encode())
    appends = [m for m in h.take(MessageType.APP) if m.to == "b"]
    assert len(appends) == 3
    assert h["a"].status().progress["b"].state is ProgressState.REPLICATE


def test_batching_packs_many_entries_into_one_append_up_to_the_size_limit() -> None:
    h = Harness(max_size_per_msg=10)
    h.elect("a")
    h.isolated.add("b")
    for _ in range(20):
        h["a"].propose(b"12345")
    h.take()
    h.isolated.clear()
    h["a"].tick()
    h.stabilize()
    assert h["b"].status().last_index == h["a"].status().last_index
    h.isolated.add("c")
    for _ in range(6):
        h["a"].propose(b"12345")
    appends = [m for m in h.take(MessageType.APP) if m.to == "b"]
    assert all(sum(len(e.data) for e in m.entries) <= 10 for m in appends)


def test_probe_state_sends_one_append_per_round_trip() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.add("b")
    h["a"].propose(b"x")
    h.stabilize()
    h["a"].step(message(MessageType.APP_RESP, "b", term=1, index=2, reject=True, reject_hint=1, log_term=1))
    assert h["a"].status().progress["b"].state is ProgressState.PROBE
    for i in range(5):
        h["a"].propose(f"y{i}".encode())
    assert len([m for m in h.take(MessageType.APP) if m.to == "b"]) == 1


# ---------------------------------------------------------------- stale responses


def test_stale_ack_never_moves_next_index_backwards() -> None:
    h = Harness()
    h.elect("a")
    for i in range(5):
        h["a"].propose(f"p{i}".encode())
    h.stabilize()
    before = h["a"].status().progress["b"]
    h["a"].step(message(MessageType.APP_RESP, "b", term=1, index=2))
    after = h["a"].status().progress["b"]
    assert (after.match, after.next) == (before.match, before.next)


def test_stale_rejection_is_ignored() -> None:
    h = Harness()
    h.elect("a")
    for i in range(5):
        h["a"].propose(f"p{i}".encode())
    h.stabilize()
    before = h["a"].status().progress["b"]
    h["a"].step(message(MessageType.APP_RESP, "b", term=1, index=3, reject=True, reject_hint=0))
    after = h["a"].status().progress["b"]
    assert (after.match, after.next, after.state) == (before.match, before.next, before.state)
