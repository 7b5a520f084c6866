"""The metadata machine's fence on `set_members`: a member list decided under an older leadership of
the queue's group never replaces one decided under a newer one (finding 5 of issue 17)."""

from __future__ import annotations

import msgpack
import pytest

from cluster.metadata import SNAPSHOT_VERSION, Metadata


def declared(members: list[str]) -> Metadata:
    state = Metadata()
    assert state.apply(["declare", "q", {}, members, 1000]) == ["created", "q1.q"]
    return state


def test_finding5_a_deposed_queue_leader_cannot_rewrite_members() -> None:
    state = declared(["a", "b", "c"])
    # The leader of term 3 lists a newcomer before adding it to the group.
    assert state.apply(["set_members", "q", "q1.q", ["a", "b", "c", "x"], [3, 1]]) == ["ok"]
    # The leader of term 2, deposed but not yet aware of it, heals from its old configuration.
    reply = state.apply(["set_members", "q", "q1.q", ["a", "b", "c"], [2, 9]])
    assert reply[0] == "stale" and "[2, 9]" in reply[1] and "[3, 1]" in reply[1]
    assert state.queues["q"].members == ["a", "b", "c", "x"]
    assert state.queues["q"].members_fence == [3, 1]


def test_within_a_term_an_earlier_decision_of_the_leader_loses_to_a_later_one() -> None:
    state = declared(["a", "b", "c"])
    assert state.apply(["set_members", "q", "q1.q", ["a", "b", "c", "x"], [3, 5]]) == ["ok"]
    assert state.apply(["set_members", "q", "q1.q", ["a", "b", "c"], [3, 4]])[0] == "stale"
    assert state.apply(["set_members", "q", "q1.q", ["a", "b", "c", "x"], [3, 5]]) == ["ok"]  # a resend
    assert state.apply(["set_members", "q", "q1.q", ["a", "b", "x"], [4, 1]]) == ["ok"]
    assert state.queues["q"].members == ["a", "b", "x"] and state.queues["q"].members_fence == [4, 1]


def test_unfenced_set_members_of_an_old_log_apply_as_before_until_a_fenced_one_did() -> None:
    state = declared(["a", "b", "c"])
    assert state.apply(["set_members", "q", "q1.q", ["a", "b", "c", "x"]]) == ["ok"]
    assert state.apply(["set_members", "q", "q1.q", ["a", "b"]]) == ["ok"]
    assert state.queues["q"].members == ["a", "b"] and state.queues["q"].initial_members == []
    assert state.queues["q"].members_fence == [0, 0]
    assert state.apply(["set_members", "q", "q1.q", ["a", "b", "x"], [1, 1]]) == ["ok"]
    assert state.apply(["set_members", "q", "q1.q", ["a"]])[0] == "stale"
    assert state.queues["q"].members == ["a", "b", "x"]


@pytest.mark.parametrize("fence", [[1], [1, 2, 3], [-1, 0], [1, "2"], [True, 1], "1,2", [1.0, 2]])
def test_a_malformed_fence_is_an_error_that_changes_nothing(fence: object) -> None:
    state = declared(["a", "b", "c"])
    before = Metadata.restore(state.snapshot())
    reply = state.apply(["set_members", "q", "q1.q", ["a"], fence])
    assert reply[0] == "error" and "fence" in reply[1]
    assert state == before


def test_a_deleted_and_declared_again_queue_starts_unfenced() -> None:
    state = declared(["a", "b", "c"])
    assert state.apply(["set_members", "q", "q1.q", ["a", "b"], [7, 3]]) == ["ok"]
    assert state.apply(["delete", "q", "q1.q"]) == ["ok"]
    assert state.apply(["declare", "q", {}, ["c"], 2000]) == ["created", "q2.q"]
    assert state.queues["q"].members_fence == [0, 0]
    assert state.apply(["set_members", "q", "q2.q", ["c", "a"], [1, 1]]) == ["ok"]


def test_the_snapshot_keeps_each_queues_fence() -> None:
    state = declared(["a", "b", "c"])
    assert state.apply(["set_members", "q", "q1.q", ["a", "b"], [7, 3]]) == ["ok"]
    restored = Metadata.restore(state.snapshot())
    assert restored == state
    assert restored.apply(["set_members", "q", "q1.q", ["a", "b", "c"], [7, 2]])[0] == "stale"


def test_a_snapshot_of_the_first_format_restores_with_unfenced_queues() -> None:
    first_format = msgpack.packb(
        {
            "nodes": [{"name": "a", "http": "http://a:1", "raft": "a:2"}],
            "queues": [
                {
                    "name": "q",
                    "group": "q1.q",
                    "arguments": {},
                    "members": ["a", "b"],
                    "created_ms": 1000,
                    "initial_members": [],
                }
            ],
            "next_group": 2,
            "users": [],
            "users_initialised": True,
        }
    )
    state = Metadata.restore(first_format)
    assert state.queues["q"].members == ["a", "b"] and state.queues["q"].members_fence == [0, 0]
    assert state.apply(["set_members", "q", "q1.q", ["a", "b", "c"]]) == ["ok"]
    assert state.apply(["set_members", "q", "q1.q", ["a", "c"], [2, 1]]) == ["ok"]
    assert msgpack.unpackb(state.snapshot())["version"] == SNAPSHOT_VERSION


def test_a_snapshot_of_an_unknown_format_is_refused() -> None:
    raw = msgpack.unpackb(declared(["a"]).snapshot())
    with pytest.raises(ValueError, match=f"version {SNAPSHOT_VERSION + 1}"):
        Metadata.restore(msgpack.packb({**raw, "version": SNAPSHOT_VERSION + 1}))
