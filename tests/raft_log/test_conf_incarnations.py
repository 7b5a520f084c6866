"""Configurations record each member's incarnation (finding 7 of issue 17); older encodings still read."""

from __future__ import annotations

import msgpack
import pytest

from raft_log.confchange import (
    ConfChange,
    ConfChangeKind,
    apply_conf_change,
    decode_conf_change,
    encode_conf_change,
)
from raft_log.errors import InvalidConfChangeError
from raft_log.messages import Message, MessageType, decode_message, encode_message
from raft_log.storage import records
from raft_log.storage.keys import GroupKeys
from raft_log.types import ConfState, SnapshotMeta

KEYS = GroupKeys("g")
WITH = ConfState(voters=("a", "b"), learners=("c",), incarnations=(("a", "ia"), ("c", "ic")))


def test_a_conf_change_carries_the_added_nodes_incarnation_and_old_ones_read_as_unknown() -> None:
    change = ConfChange(ConfChangeKind.ADD_LEARNER, "c", "ic")
    assert decode_conf_change(encode_conf_change(change)) == change
    written_before = msgpack.packb([int(ConfChangeKind.ADD_VOTER), "c"])
    assert decode_conf_change(written_before) == ConfChange(ConfChangeKind.ADD_VOTER, "c", None)
    assert encode_conf_change(ConfChange(ConfChangeKind.REMOVE, "c")) == msgpack.packb([3, "c"])


def test_membership_changes_record_and_forget_incarnations() -> None:
    conf = apply_conf_change(ConfState(voters=("a", "b")), ConfChange(ConfChangeKind.ADD_LEARNER, "c", "ic"))
    assert conf.incarnation_of("c") == "ic" and conf.incarnation_of("a") is None
    promoted = apply_conf_change(conf, ConfChange(ConfChangeKind.PROMOTE, "c"))
    assert promoted.voters == ("a", "b", "c") and promoted.incarnation_of("c") == "ic"
    removed = apply_conf_change(promoted, ConfChange(ConfChangeKind.REMOVE, "c"))
    assert removed == ConfState(voters=("a", "b"))
    again = apply_conf_change(removed, ConfChange(ConfChangeKind.ADD_LEARNER, "c", "ic2"))
    assert again.incarnation_of("c") == "ic2"


def test_stored_memberships_keep_incarnations_and_old_records_still_decode() -> None:
    stored = records.encode_conf_state(KEYS.conf_state, WITH)
    assert records.decode_conf_state(KEYS.conf_state, stored) == WITH
    old = records.seal(KEYS.conf_state, msgpack.packb([["a", "b"], ["c"]]))
    assert records.decode_conf_state(KEYS.conf_state, old) == ConfState(voters=("a", "b"), learners=("c",))
    assert records.encode_conf_state(KEYS.conf_state, ConfState(voters=("a", "b"), learners=("c",))) == old
    meta = SnapshotMeta(5, 2, WITH)
    assert (
        records.decode_snapshot_meta(
            KEYS.snapshot_meta, records.encode_snapshot_meta(KEYS.snapshot_meta, meta)
        )
        == meta
    )
    old_meta = records.seal(KEYS.snapshot_meta, msgpack.packb([5, 2, ["a", "b"], ["c"]]))
    assert records.decode_snapshot_meta(KEYS.snapshot_meta, old_meta) == SnapshotMeta(
        5, 2, ConfState(("a", "b"), ("c",))
    )


def test_a_snapshot_message_carries_incarnations_and_the_old_form_still_decodes() -> None:
    message = Message(MessageType.SNAP, "g", "a", "c", term=2, snapshot=SnapshotMeta(5, 2, WITH))
    assert decode_message(encode_message(message)).snapshot == message.snapshot
    plain = Message(MessageType.SNAP, "g", "a", "c", term=2, snapshot=SnapshotMeta(5, 2, ConfState(("a",))))
    assert msgpack.unpackb(encode_message(plain))[12] == [5, 2, ["a"], []]  # the form older peers read
    assert decode_message(encode_message(plain)) == plain


def test_rule_bind_records_an_unknown_incarnation_of_an_existing_member_only() -> None:
    seeds = ConfState(voters=("a", "b"), learners=("c",))
    bind = ConfChange(ConfChangeKind.BIND_INCARNATION, "b", "ib")
    assert encode_conf_change(bind) == msgpack.packb([4, "b", "ib"])  # the shape of every change
    assert decode_conf_change(encode_conf_change(bind)) == bind
    bound = apply_conf_change(seeds, bind)
    assert bound == ConfState(voters=("a", "b"), learners=("c",), incarnations=(("b", "ib"),))
    learner = apply_conf_change(bound, ConfChange(ConfChangeKind.BIND_INCARNATION, "c", "ic"))
    assert learner.learners == ("c",) and learner.incarnation_of("c") == "ic"
    assert learner.incarnation_of("b") == "ib"
    for refused, why in (
        (ConfChange(ConfChangeKind.BIND_INCARNATION, "d", "id"), "not a member"),
        (ConfChange(ConfChangeKind.BIND_INCARNATION, "b", "ib2"), "already"),
        (ConfChange(ConfChangeKind.BIND_INCARNATION, "a"), "incarnation"),
    ):
        with pytest.raises(InvalidConfChangeError, match=why):
            apply_conf_change(bound, refused)
    for kind, node in ((0, "d"), (1, "d"), (2, "c"), (3, "a")):  # entries written before still decode
        assert decode_conf_change(msgpack.packb([kind, node])) == ConfChange(ConfChangeKind(kind), node)
