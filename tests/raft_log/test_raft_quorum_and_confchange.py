"""Majority arithmetic and single-server membership changes."""

from __future__ import annotations

import pytest

from raft_log.confchange import (
    ConfChange,
    ConfChangeKind,
    apply_conf_change,
    decode_conf_change,
    encode_conf_change,
)
from raft_log.errors import InvalidConfChangeError
from raft_log.quorum import VoteResult, committed_index, has_quorum, vote_result
from raft_log.types import ConfState


@pytest.mark.parametrize(
    ("matches", "expected"),
    [
        ({"a": 5}, 5),
        ({"a": 5, "b": 3}, 3),
        ({"a": 5, "b": 3, "c": 9}, 5),
        ({"a": 1, "b": 7, "c": 7, "d": 2}, 2),
    ],
)
def test_commit_index_is_the_highest_index_a_majority_holds(matches: dict[str, int], expected: int) -> None:
    assert committed_index(tuple(matches), matches) == expected


def test_votes_win_with_a_majority_and_lose_once_it_is_out_of_reach() -> None:
    voters = ("a", "b", "c")
    assert vote_result(voters, {"a": True}) is VoteResult.PENDING
    assert vote_result(voters, {"a": True, "b": True}) is VoteResult.WON
    assert vote_result(voters, {"a": True, "b": False}) is VoteResult.PENDING
    assert vote_result(voters, {"a": True, "b": False, "c": False}) is VoteResult.LOST
    assert vote_result(voters, {"learner": True, "a": True}) is VoteResult.PENDING  # non-voters never count


def test_quorum_counts_only_voters() -> None:
    assert has_quorum(("a", "b", "c"), {"a", "b"})
    assert not has_quorum(("a", "b", "c"), {"a", "learner"})


def test_membership_changes_move_exactly_one_node() -> None:
    conf = ConfState(voters=("a", "b"))
    conf = apply_conf_change(conf, ConfChange(ConfChangeKind.ADD_LEARNER, "c"))
    assert conf == ConfState(voters=("a", "b"), learners=("c",))
    conf = apply_conf_change(conf, ConfChange(ConfChangeKind.PROMOTE, "c"))
    assert conf == ConfState(voters=("a", "b", "c"))
    conf = apply_conf_change(conf, ConfChange(ConfChangeKind.REMOVE, "a"))
    assert conf == ConfState(voters=("b", "c"))


@pytest.mark.parametrize(
    "change",
    [
        ConfChange(ConfChangeKind.ADD_VOTER, "a"),
        ConfChange(ConfChangeKind.ADD_LEARNER, "l"),
        ConfChange(ConfChangeKind.PROMOTE, "a"),
        ConfChange(ConfChangeKind.REMOVE, "zz"),
    ],
)
def test_a_change_that_does_not_fit_the_membership_is_refused(change: ConfChange) -> None:
    with pytest.raises(InvalidConfChangeError):
        apply_conf_change(ConfState(voters=("a",), learners=("l",)), change)


def test_the_last_voter_cannot_be_removed() -> None:
    with pytest.raises(InvalidConfChangeError):
        apply_conf_change(ConfState(voters=("a",)), ConfChange(ConfChangeKind.REMOVE, "a"))


def test_conf_change_entry_payload_round_trips() -> None:
    change = ConfChange(ConfChangeKind.PROMOTE, "node-7")
    assert decode_conf_change(encode_conf_change(change)) == change
