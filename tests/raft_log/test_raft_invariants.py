"""The safety checker flags every kind of broken history (so a passing simulation means something)."""

from __future__ import annotations

import pytest

from raft_log.testing.invariants import InvariantViolation, SafetyChecker
from raft_log.types import Entry

X = Entry(1, 1, data=b"x")
Y = Entry(1, 1, data=b"y")
DIGEST_X, DIGEST_Y = b"x" * 32, b"y" * 32


def test_two_leaders_in_one_term_are_flagged() -> None:
    checker = SafetyChecker()
    checker.observe_leader("a", 3)
    checker.observe_leader("a", 3)
    checker.observe_leader("b", 4)
    with pytest.raises(InvariantViolation, match="two leaders"):
        checker.observe_leader("b", 3)


def test_same_index_and_term_after_different_histories_is_flagged() -> None:
    checker = SafetyChecker()
    checker.observe_persisted("a", Entry(5, 3), previous_term=2)
    checker.observe_persisted("b", Entry(5, 3), previous_term=2)
    with pytest.raises(InvariantViolation, match="log matching"):
        checker.observe_persisted("c", Entry(5, 3), previous_term=1)


def test_same_index_and_term_with_different_data_is_flagged() -> None:
    checker = SafetyChecker()
    checker.observe_persisted("a", X, previous_term=0)
    with pytest.raises(InvariantViolation, match="different data"):
        checker.observe_persisted("b", Y, previous_term=0)


def test_two_nodes_applying_different_entries_at_one_index_is_flagged() -> None:
    checker = SafetyChecker()
    checker.observe_applied("a", X, node_term=1, digest=DIGEST_X)
    checker.observe_applied("b", X, node_term=1, digest=DIGEST_X)
    with pytest.raises(InvariantViolation, match="state machine safety"):
        checker.observe_applied("c", Entry(1, 2, data=b"x"), node_term=2, digest=DIGEST_Y)


def test_diverging_state_after_a_snapshot_is_flagged() -> None:
    checker = SafetyChecker()
    checker.observe_applied("a", X, node_term=1, digest=DIGEST_X)
    with pytest.raises(InvariantViolation, match="different state"):
        checker.observe_state("b", 1, DIGEST_Y)


def test_leader_missing_an_entry_committed_in_an_earlier_term_is_flagged() -> None:
    checker = SafetyChecker()
    checker.observe_applied("a", Entry(1, 1), node_term=1, digest=DIGEST_X)
    checker.observe_applied("a", Entry(2, 2, data=b"acked"), node_term=2, digest=DIGEST_Y)
    log = {1: 1, 2: 2}
    checker.check_leader_completeness("b", 3, log.get, compacted_through=0)
    checker.check_leader_completeness("b", 2, {1: 1}.get, compacted_through=0)  # same term: not yet required
    with pytest.raises(InvariantViolation, match="leader completeness"):
        checker.check_leader_completeness("c", 3, {1: 1, 2: 1}.get, compacted_through=0)
    checker.check_leader_completeness("c", 3, {}.get, compacted_through=2)  # compacted into its snapshot


def test_committed_entry_missing_after_healing_is_flagged() -> None:
    checker = SafetyChecker()
    checker.observe_applied("a", Entry(1, 1, data=b"acked"), node_term=1, digest=DIGEST_X)
    with pytest.raises(InvariantViolation, match="lost"):
        checker.check_nothing_lost("a", {}.get, compacted_through=0)
