"""The wire format: every message survives msgpack, and garbage from the network fails cleanly."""

from __future__ import annotations

import contextlib

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from raft_log.errors import MessageDecodeError
from raft_log.messages import Message, MessageType, decode_message, encode_message, encode_message_parts
from raft_log.types import ConfState, Entry, EntryKind, SnapshotMeta

counters = st.integers(min_value=0, max_value=2**63 - 1)
names = st.text(min_size=1, max_size=8)
entries = st.builds(Entry, index=counters, term=counters, kind=st.sampled_from(EntryKind), data=st.binary())
metas = st.builds(
    SnapshotMeta,
    index=counters,
    term=counters,
    conf=st.builds(ConfState, voters=st.tuples(names, names), learners=st.tuples(names)),
)
messages = st.builds(
    Message,
    type=st.sampled_from(MessageType),
    group=names,
    frm=names,
    to=names,
    term=counters,
    log_term=counters,
    index=counters,
    entries=st.lists(entries, max_size=4).map(tuple),
    commit=counters,
    reject=st.booleans(),
    reject_hint=counters,
    snapshot=st.none() | metas,
    chunk_offset=counters,
    chunk_data=st.binary(),
    chunk_done=st.booleans(),
    context=st.binary(max_size=16),
)


@given(messages)
def test_every_message_round_trips_through_the_wire_format(msg: Message) -> None:
    assert decode_message(encode_message(msg)) == msg


@given(messages)
def test_the_encoding_built_in_parts_is_msgpacks_own_and_keeps_entry_data_uncopied(msg: Message) -> None:
    parts = encode_message_parts(msg)
    encoded = b"".join(parts)
    assert msgpack.packb(msgpack.unpackb(encoded, raw=False), use_bin_type=True) == encoded
    assert all(any(part is entry.data for part in parts) for entry in msg.entries)


@given(st.binary())
def test_arbitrary_bytes_raise_only_message_decode_error(data: bytes) -> None:
    with contextlib.suppress(MessageDecodeError):
        decode_message(data)


@given(messages, st.integers(min_value=0, max_value=16), st.sampled_from([None, -1, "x", 1.5, [], b"", True]))
def test_a_field_of_the_wrong_type_raises_message_decode_error(
    msg: Message, position: int, value: object
) -> None:
    fields = msgpack.unpackb(encode_message(msg))
    if type(fields[position]) is type(value) and not (isinstance(value, int) and value < 0):
        return  # not actually a wrong type for this field
    if position == 12 and value is None:
        return  # no snapshot is legal
    fields[position] = value
    with pytest.raises(MessageDecodeError):
        decode_message(msgpack.packb(fields))


def test_truncated_message_raises_message_decode_error() -> None:
    data = encode_message(Message(MessageType.APP, "g", "a", "b", entries=(Entry(1, 1, data=b"x"),)))
    for cut in range(len(data)):
        with pytest.raises(MessageDecodeError):
            decode_message(data[:cut])


def test_message_names_its_group_so_one_connection_carries_every_group() -> None:
    msg = decode_message(encode_message(Message(MessageType.HEARTBEAT, "queue-17", "a", "b")))
    assert msg.group == "queue-17"
