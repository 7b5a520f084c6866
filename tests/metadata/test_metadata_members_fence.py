"""The metadata machine's fence on `SetMembers`: a member list decided under an older leadership of
the queue's group never replaces one decided under a newer one (finding 5 of issue 17)."""

from __future__ import annotations

import msgpack
import pytest

from cluster.metadata.metadata_app import MetadataApp
from cluster.replication.unreadable_entry import UnreadableEntry
from metadata_state.codec import MetadataDecodeError, decode
from metadata_state.commands import Declare, Delete, InvalidCommand, SetMembers
from metadata_state.machine import MetadataMachine
from metadata_state.replies import Created, Ok, Stale
from metadata_state.snapshot import SNAPSHOT_VERSION, decode_snapshot, encode_snapshot
from raft_log.types import Entry, EntryKind


def declared(members: list[str]) -> MetadataMachine:
    state = MetadataMachine()
    assert state.apply(Declare("q", {}, tuple(members), 1000)) == Created("q1.q")
    return state


def members(listed: list[str], fence: tuple[int, int] | None = None, group: str = "q1.q") -> SetMembers:
    if fence is None:
        return SetMembers("q", group, tuple(listed))
    return SetMembers("q", group, tuple(listed), fence)


def test_rule_a_deposed_queue_leader_cannot_rewrite_members() -> None:
    state = declared(["a", "b", "c"])
    # The leader of term 3 lists a newcomer before adding it to the group.
    assert state.apply(members(["a", "b", "c", "x"], (3, 1))) == Ok()
    # The leader of term 2, deposed but not yet aware of it, heals from its old configuration.
    reply = state.apply(members(["a", "b", "c"], (2, 9)))
    assert isinstance(reply, Stale) and "[2, 9]" in reply.reason and "[3, 1]" in reply.reason
    assert state.queues["q"].members == ["a", "b", "c", "x"]
    assert state.queues["q"].members_fence == [3, 1]


def test_within_a_term_an_earlier_decision_of_the_leader_loses_to_a_later_one() -> None:
    state = declared(["a", "b", "c"])
    assert state.apply(members(["a", "b", "c", "x"], (3, 5))) == Ok()
    assert isinstance(state.apply(members(["a", "b", "c"], (3, 4))), Stale)
    assert state.apply(members(["a", "b", "c", "x"], (3, 5))) == Ok()  # a resend
    assert state.apply(members(["a", "b", "x"], (4, 1))) == Ok()
    assert state.queues["q"].members == ["a", "b", "x"] and state.queues["q"].members_fence == [4, 1]


def test_unfenced_set_members_of_an_old_log_apply_as_before_until_a_fenced_one_did() -> None:
    state = declared(["a", "b", "c"])
    assert state.apply(decode(["set_members", "q", "q1.q", ["a", "b", "c", "x"]])) == Ok()
    assert state.apply(decode(["set_members", "q", "q1.q", ["a", "b"], None])) == Ok()
    assert state.queues["q"].members == ["a", "b"] and state.queues["q"].initial_members == []
    assert state.queues["q"].members_fence == [0, 0]
    assert state.apply(members(["a", "b", "x"], (1, 1))) == Ok()
    assert isinstance(state.apply(decode(["set_members", "q", "q1.q", ["a"]])), Stale)
    assert state.queues["q"].members == ["a", "b", "x"]


def test_a_fenced_change_keeps_the_initial_members_and_snapshots_in_version_6() -> None:
    """An initial member whose metadata lagged past the change still bootstraps the group (seed 5100173);
    version 5 read initial members as a membership never changed, so it must not read this one."""
    state = declared(["a", "b", "c"])
    assert msgpack.unpackb(encode_snapshot(state))["version"] == 3
    assert state.apply(members(["a", "b"], (2, 1))) == Ok()
    assert state.queues["q"].initial_members == ["a", "b", "c"]
    assert msgpack.unpackb(encode_snapshot(state))["version"] == 6
    assert decode_snapshot(encode_snapshot(state)) == state


MALFORMED_FENCES = [[1], [1, 2, 3], [-1, 0], [1, "2"], [True, 1], "1,2", [1.0, 2]]


@pytest.mark.parametrize("fence", MALFORMED_FENCES)
def test_a_malformed_fence_is_refused_and_changes_nothing(fence: object) -> None:
    with pytest.raises(InvalidCommand, match="fence"):
        SetMembers("q", "q1.q", ("a",), fence)  # type: ignore[arg-type]
    with pytest.raises(MetadataDecodeError, match="fence"):
        decode(["set_members", "q", "q1.q", ["a"], fence])
    app = MetadataApp(lambda: None)
    app.state = declared(["a", "b", "c"])
    before = decode_snapshot(app.snapshot_data())
    entry = Entry(
        index=2,
        term=1,
        kind=EntryKind.NORMAL,
        data=msgpack.packb([["set_members", "q", "q1.q", ["a"], fence]]),
    )
    with pytest.raises(UnreadableEntry, match="fence"):  # no node writes it: its group halts there
        app.apply(entry)
    assert app.state == before


def test_a_deleted_and_declared_again_queue_starts_unfenced() -> None:
    state = declared(["a", "b", "c"])
    assert state.apply(members(["a", "b"], (7, 3))) == Ok()
    assert state.apply(Delete("q", "q1.q")) == Ok()
    assert state.apply(Declare("q", {}, ("c",), 2000)) == Created("q2.q")
    assert state.queues["q"].members_fence == [0, 0]
    assert state.apply(members(["c", "a"], (1, 1), group="q2.q")) == Ok()


def test_the_snapshot_keeps_each_queues_fence() -> None:
    state = declared(["a", "b", "c"])
    assert state.apply(members(["a", "b"], (7, 3))) == Ok()
    restored = decode_snapshot(encode_snapshot(state))
    assert restored == state
    assert isinstance(restored.apply(members(["a", "b", "c"], (7, 2))), Stale)


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
    state = decode_snapshot(first_format)
    assert state.queues["q"].members == ["a", "b"] and state.queues["q"].members_fence == [0, 0]
    assert state.apply(members(["a", "b", "c"])) == Ok()
    assert state.apply(members(["a", "c"], (2, 1))) == Ok()
    assert msgpack.unpackb(encode_snapshot(state))["version"] == 3  # no policies: what version 3 reads


def test_a_snapshot_of_an_unknown_format_is_refused() -> None:
    raw = msgpack.unpackb(encode_snapshot(declared(["a"])))
    with pytest.raises(ValueError, match=f"version {SNAPSHOT_VERSION + 1}"):
        decode_snapshot(msgpack.packb({**raw, "version": SNAPSHOT_VERSION + 1}))
