"""The metadata's node registry records each node's incarnation (finding 7 of issue 17)."""

from __future__ import annotations

import msgpack
import pytest

from metadata_state.codec import MetadataDecodeError, decode
from metadata_state.commands import Declare, ForgetNode, RegisterNode, SetMembers
from metadata_state.machine import MetadataMachine
from metadata_state.records import NodeInfo
from metadata_state.replies import NotFound, Ok
from metadata_state.snapshot import decode_snapshot, encode_snapshot


def test_register_node_records_the_incarnation_and_old_entries_still_replay() -> None:
    state = MetadataMachine()
    logged_before_incarnations = decode(["register_node", "a", "http://a:1", "a:2"])
    assert state.apply(logged_before_incarnations) == Ok()
    assert state.nodes["a"] == NodeInfo("a", "http://a:1", "a:2", "")
    assert state.apply(RegisterNode("a", "http://a:1", "a:2", "inc1")) == Ok()
    assert state.nodes["a"].incarnation == "inc1"
    assert decode_snapshot(encode_snapshot(state)) == state


def test_a_malformed_incarnation_is_refused() -> None:
    with pytest.raises(MetadataDecodeError, match="incarnation"):
        decode(["register_node", "a", "http://a:1", "a:2", 7])


def test_a_snapshot_without_incarnations_restores_them_unknown() -> None:
    state = MetadataMachine()
    state.apply(RegisterNode("a", "http://a:1", "a:2", "inc1"))
    raw = msgpack.unpackb(encode_snapshot(state))
    old = {**raw, "version": 2, "nodes": [{"name": "a", "http": "http://a:1", "raft": "a:2"}]}
    assert decode_snapshot(msgpack.packb(old)).nodes["a"] == NodeInfo("a", "http://a:1", "a:2")


def test_a_declared_queue_records_its_initial_members_incarnations() -> None:
    state = MetadataMachine()
    state.apply(RegisterNode("a", "http://a:1", "a:2", "ia"))
    state.apply(RegisterNode("b", "http://b:1", "b:2"))
    state.apply(Declare("q", {}, ("a", "b", "c"), 1000))
    assert state.queues["q"].initial_incarnations == {"a": "ia"}
    assert decode_snapshot(encode_snapshot(state)) == state
    state.apply(SetMembers("q", state.queues["q"].group, ("a", "b"), (1, 1)))
    assert state.queues["q"].initial_incarnations == {"a": "ia"}  # the bootstrap configuration stays


def test_forgetting_a_node_removes_it_and_an_unknown_one_is_not_found() -> None:
    state = MetadataMachine()
    state.apply(RegisterNode("a", "http://a:1", "a:2", "ia"))
    assert state.apply(ForgetNode("a")) == Ok()
    assert state.nodes == {}
    assert isinstance(state.apply(ForgetNode("a")), NotFound)


def test_a_new_incarnation_remembers_the_one_it_replaced_and_snapshots_keep_the_older_form() -> None:
    """Queue hosting tells a wiped initial member from the node a queue was declared on by this."""
    state = MetadataMachine()
    state.apply(RegisterNode("a", "http://a:1", "a:2", "ia"))
    state.apply(RegisterNode("a", "http://a:9", "a:2", "ia"))  # moved: still its first incarnation
    assert state.nodes["a"].earlier_incarnation == ""
    assert msgpack.unpackb(encode_snapshot(state))["version"] == 3  # nothing a version-4 reader lacks
    state.apply(RegisterNode("a", "http://a:9", "a:2", "ia2"))
    state.apply(RegisterNode("a", "http://a:1", "a:2", "ia2"))
    assert state.nodes["a"] == NodeInfo("a", "http://a:1", "a:2", "ia2", earlier_incarnation="ia")
    raw = msgpack.unpackb(encode_snapshot(state))
    assert raw["version"] == 5 and decode_snapshot(encode_snapshot(state)) == state
