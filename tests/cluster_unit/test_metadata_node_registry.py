"""The metadata's node registry records each node's incarnation (finding 7 of issue 17)."""

from __future__ import annotations

import msgpack

from cluster.metadata import Metadata, NodeInfo


def test_finding7_register_node_records_the_incarnation_and_old_entries_still_replay() -> None:
    state = Metadata()
    assert state.apply(["register_node", "a", "http://a:1", "a:2"]) == ["ok"]  # logged before incarnations
    assert state.nodes["a"] == NodeInfo("a", "http://a:1", "a:2", "")
    assert state.apply(["register_node", "a", "http://a:1", "a:2", "inc1"]) == ["ok"]
    assert state.nodes["a"].incarnation == "inc1"
    assert Metadata.restore(state.snapshot()) == state


def test_a_malformed_incarnation_is_an_error_that_changes_nothing() -> None:
    state = Metadata()
    state.apply(["register_node", "a", "http://a:1", "a:2", "inc1"])
    assert state.apply(["register_node", "a", "http://a:1", "a:2", 7])[0] == "error"
    assert state.nodes["a"].incarnation == "inc1"


def test_a_snapshot_without_incarnations_restores_them_unknown() -> None:
    state = Metadata()
    state.apply(["register_node", "a", "http://a:1", "a:2", "inc1"])
    raw = msgpack.unpackb(state.snapshot())
    old = {**raw, "version": 2, "nodes": [{"name": "a", "http": "http://a:1", "raft": "a:2"}]}
    assert Metadata.restore(msgpack.packb(old)).nodes["a"] == NodeInfo("a", "http://a:1", "a:2")


def test_finding7_a_declared_queue_records_its_initial_members_incarnations() -> None:
    state = Metadata()
    state.apply(["register_node", "a", "http://a:1", "a:2", "ia"])
    state.apply(["register_node", "b", "http://b:1", "b:2"])
    state.apply(["declare", "q", {}, ["a", "b", "c"], 1000])
    assert state.queues["q"].initial_incarnations == {"a": "ia"}
    assert Metadata.restore(state.snapshot()) == state
    state.apply(["set_members", "q", state.queues["q"].group, ["a", "b"], [1, 1]])
    assert state.queues["q"].initial_incarnations == {}
