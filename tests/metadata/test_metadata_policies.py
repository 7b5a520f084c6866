"""Policies in the metadata machine (issue 22, feature 8): set, replaced, cleared, and kept by a snapshot
of version 4, which is written once there was a policy; every change is a new revision."""

from __future__ import annotations

import msgpack

from metadata_state.commands import ClearPolicy, SetPolicy
from metadata_state.machine import MetadataMachine
from metadata_state.records import PolicyRecord
from metadata_state.replies import Created, NotFound, Ok, Updated
from metadata_state.snapshot import decode_snapshot, encode_snapshot


def test_a_policy_is_created_replaced_and_cleared() -> None:
    state = MetadataMachine()
    assert state.apply(SetPolicy("limits", "^orders", {"max-length": 5}, 0)) == Created()
    assert state.apply(SetPolicy("limits", "^orders", {"max-length": 9}, 2)) == Updated()
    assert state.policies == {"limits": PolicyRecord("limits", "^orders", {"max-length": 9}, 2)}
    assert state.apply(ClearPolicy("limits")) == Ok()
    assert isinstance(state.apply(ClearPolicy("limits")), NotFound)
    assert state.policies == {}
    assert state.policies_revision == 3  # every change counts; a refused one does not


def test_a_snapshot_keeps_policies_in_version_4_once_there_was_one() -> None:
    state = MetadataMachine()
    assert msgpack.unpackb(encode_snapshot(state))["version"] == 3
    state.apply(SetPolicy("ttl", ".*", {"message-ttl": 1000}, -3))
    data = encode_snapshot(state)
    assert msgpack.unpackb(data)["version"] == 4
    assert decode_snapshot(data).policies == state.policies
    state.apply(ClearPolicy("ttl"))
    data = encode_snapshot(state)  # no policy left, but a revision a queue may have applied
    assert msgpack.unpackb(data)["version"] == 4 and decode_snapshot(data).policies_revision == 2


def test_an_operator_policy_lives_beside_the_policies_and_counts_in_the_same_revision() -> None:
    state = MetadataMachine()
    assert state.apply(SetPolicy("cap", ".*", {"max-length": 5}, 0)) == Created()
    assert state.apply(SetPolicy("cap", ".*", {"max-length": 100}, 0, operator=True)) == Created()
    assert state.policies["cap"].definition == {"max-length": 5}
    assert state.operator_policies == {"cap": PolicyRecord("cap", ".*", {"max-length": 100}, 0)}
    assert state.apply(ClearPolicy("cap", operator=True)) == Ok()
    assert isinstance(state.apply(ClearPolicy("cap", operator=True)), NotFound)
    assert state.operator_policies == {} and "cap" in state.policies
    assert state.policies_revision == 3


def test_a_snapshot_keeps_operator_policies_in_version_7_only_while_there_is_one() -> None:
    state = MetadataMachine()
    state.apply(SetPolicy("cap", ".*", {"max-length": 100}, 4, operator=True))
    data = encode_snapshot(state)
    assert msgpack.unpackb(data)["version"] == 7
    restored = decode_snapshot(data)
    assert restored.operator_policies == state.operator_policies and restored.policies == {}
    state.apply(ClearPolicy("cap", operator=True))
    assert msgpack.unpackb(encode_snapshot(state))["version"] == 4
