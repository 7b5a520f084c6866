"""Hypothesis against every decoder of bytes from the network: malformed input is rejected with the
decoder's own error, never another exception, and never changes state.

Examples per test: QUORUMQ_FUZZ_EXAMPLES (default 200 in CI; see docs/operate/security.md for long runs).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import os
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.errors import ApiError
from api.forwarded_publish import PUBLISH, decode_frame
from api.publish_job import publish_of
from api.stream_frames import CLIENT_OPS, HELLO_MAX_BYTES, BadFrame, read_frame
from api.tokens import verify_token
from api.validation import MAX_VALUES, msgpack_object
from cluster.config import Address, NodeConfig
from cluster.metadata.metadata_app import MetadataApp
from cluster.queues.queue_limits import INT64_MAX
from cluster.queues.queue_replica import QueueReplica
from cluster.replication.entry_codec import decode_queue_op
from cluster.replication.transport import HandshakeError, _decode
from cluster.replication.unreadable_entry import UnreadableEntry
from cluster.security.peer_auth import verify_assertion
from metadata_state.commands import RegisterNode
from metadata_state.replies import Conflict, Exists, Invalid, NotFound, Stale
from metadata_state.snapshot import decode_snapshot
from queue_state.arguments import parse_arguments
from queue_state.command_codec import CommandDecodeError, decode_command_v0
from queue_state.machine import QueueMachine
from queue_state.snapshot import SnapshotError
from raft_log.errors import MessageDecodeError
from raft_log.messages import decode_message
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState, Entry, EntryKind

GROUP_NUMBERS = itertools.count()
EXAMPLES = int(os.environ.get("QUORUMQ_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
packed = values.map(msgpack.packb)
wire_bytes = st.one_of(st.binary(max_size=200), packed)
METADATA_OPS = [
    "register_node",
    "forget_node",
    "declare",
    "delete",
    "set_members",
    "set_arguments",
    "bootstrap_users",
    "put_user",
    "delete_user",
    "set_permissions",
    "no_such_op",
]
queue_ops = st.builds(  # version-1 envelopes around anything: `[1, now_ms, [tag, {field: value}], bodies]`
    lambda now, tag, fields, bodies: [1, now, [tag, fields], bodies],
    st.integers(-1, 2**64 - 1) | values,
    st.integers(0, 17),
    st.dictionaries(st.sampled_from(["messages", "publisher", "seq", "consumer", "ids", "x"]), values),
    st.none() | st.lists(st.lists(values, max_size=3), max_size=3),
)
queue_entries = st.one_of(wire_bytes, st.lists(queue_ops, max_size=4).map(msgpack.packb))
metadata_ops = st.lists(
    st.one_of(
        st.builds(lambda op, args: [op, *args], st.sampled_from(METADATA_OPS), st.lists(values, max_size=5)),
        st.builds(
            lambda version, op, fields: [version, op, fields],
            st.sampled_from([1, 2]),
            st.sampled_from(METADATA_OPS),
            st.dictionaries(st.sampled_from(["queue", "group", "node", "user", "members", "fence"]), values),
        ),
    ),
    max_size=4,
)


@FUZZ
@given(wire_bytes)
def test_raft_frames_decode_or_raise_message_decode_error(data: bytes) -> None:
    with contextlib.suppress(MessageDecodeError):
        decode_message(data)


@FUZZ
@given(wire_bytes)
def test_transport_frames_decode_or_raise_handshake_error(data: bytes) -> None:
    with contextlib.suppress(HandshakeError):
        assert isinstance(_decode(data), list)


@FUZZ
@given(wire_bytes)
def test_version_0_queue_commands_decode_or_raise_command_decode_error(data: bytes) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_command_v0(data)


@FUZZ
@given(st.one_of(values, queue_ops))
def test_queue_operations_decode_or_raise_command_decode_error(op: Any) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_queue_op(op)


@FUZZ
@given(st.lists(wire_bytes, max_size=4))
def test_queue_snapshot_chunks_restore_or_raise_snapshot_error(chunks: list[bytes]) -> None:
    with contextlib.suppress(SnapshotError):
        QueueMachine.restore(chunks)


@FUZZ
@given(st.one_of(metadata_ops.map(msgpack.packb), wire_bytes))
def test_metadata_entries_apply_or_raise_unreadable_entry_and_failed_commands_change_nothing(
    data: bytes,
) -> None:
    app = MetadataApp(lambda: None)
    app.state.apply(RegisterNode("n1", "http://h:1", "h:2"))
    try:
        ops = msgpack.unpackb(data, raw=False)
    except (ValueError, msgpack.UnpackException):
        ops = None
    if isinstance(ops, list):
        for op in ops:
            before = copy.deepcopy(app.state)
            reply = _apply_one(app, op)
            if reply is None or isinstance(reply, Invalid | NotFound | Stale | Conflict | Exists):
                assert app.state == before, (op, reply)
    else:
        before = copy.deepcopy(app.state)
        with pytest.raises(UnreadableEntry):
            app.apply(Entry(index=1, term=1, kind=EntryKind.NORMAL, data=data))
        assert app.state == before
    assert decode_snapshot(app.snapshot_data()) == app.state


def _apply_one(app: MetadataApp, op: Any) -> Any:
    """The reply to an entry of `op` alone; None when it does not decode (its group would halt)."""
    try:
        [reply] = app.apply(Entry(index=1, term=1, kind=EntryKind.NORMAL, data=msgpack.packb([op])))
    except UnreadableEntry:
        return None
    return reply


@pytest.fixture(scope="module")
def replica_store() -> Any:
    with tempfile.TemporaryDirectory() as directory:
        store = NodeStore.open(Path(directory) / "db")
        yield store
        store.close()


@settings(FUZZ, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=queue_entries)
def test_queue_entries_apply_or_raise_unreadable_entry_and_keep_a_consistent_state(
    replica_store: Any, data: bytes
) -> None:
    group = f"g{next(GROUP_NUMBERS)}"
    log = replica_store.create_group(group, ConfState(voters=("n1",)))
    replica = QueueReplica("q", group, parse_arguments({}), log)
    before = list(replica.machine.snapshot_chunks())
    try:
        replica.apply(Entry(index=1, term=1, kind=EntryKind.NORMAL, data=data))
    except UnreadableEntry:  # nothing of it applied
        assert list(replica.machine.snapshot_chunks()) == before
    restored = QueueMachine.restore(list(replica.machine.snapshot_chunks()))
    assert restored.stats() == replica.machine.stats()


SMALL_MESSAGES = NodeConfig(
    "n1", Path("/nonexistent"), Address("127.0.0.1", 1), Address("127.0.0.1", 2), max_message_bytes=1024
)


@FUZZ
@given(values)
def test_publish_bodies_parse_or_answer_a_4xx(body: Any) -> None:
    try:
        publish_of(body if isinstance(body, dict) else {"messages": body}, SMALL_MESSAGES, 0)
    except ApiError as exc:
        assert 400 <= exc.status < 500


message_maps = st.fixed_dictionaries(
    {"body": st.binary(max_size=40) | st.text(max_size=40) | values},
    optional={
        "encoding": st.sampled_from(["utf8", "base64"]) | values,
        "headers": values,
        "expiration": values,
    },
)
publish_maps = st.fixed_dictionaries(
    {"messages": st.lists(message_maps | values, max_size=4)}, optional={"publisher": values, "seq": values}
)


@FUZZ
@given(st.one_of(wire_bytes, publish_maps.map(msgpack.packb)))
def test_msgpack_publish_bodies_parse_or_answer_a_4xx_and_what_parses_can_be_logged(data: bytes) -> None:
    try:
        messages = publish_of(msgpack_object(data), SMALL_MESSAGES, 0).messages
    except ApiError as exc:
        assert 400 <= exc.status < 500
        return
    msgpack.packb([[m.body, m.headers, m.encoding, expiration] for m, expiration in messages])


stream_frames = st.fixed_dictionaries(
    {"op": st.sampled_from(sorted(CLIENT_OPS)) | values},
    optional={"id": st.integers(0, 2**64 - 1) | values, "queue": values, "messages": values, "ids": values},
)
repeated = st.builds(lambda value, times: [value] * times, values, st.integers(0, 1 << 16))


@FUZZ
@given(st.one_of(wire_bytes, stream_frames.map(msgpack.packb), repeated.map(msgpack.packb)))
def test_stream_frames_read_or_answer_a_400_or_413(data: bytes) -> None:
    for limit in (HELLO_MAX_BYTES, 1 << 24):
        try:
            frame = read_frame(data, limit)
        except BadFrame as exc:
            assert exc.status in (400, 413), exc
            continue
        assert frame.op in CLIENT_OPS and isinstance(frame.fields, dict)


@FUZZ
@given(st.one_of(values, repeated), st.integers(0, MAX_VALUES))
def test_msgpack_bodies_beyond_their_values_are_a_413(value: Any, extra: int) -> None:
    data = msgpack.packb({"v": value, "pad": [None] * extra})
    try:
        assert isinstance(msgpack_object(data), dict)
    except ApiError as exc:
        assert exc.status in (400, 413), exc


@FUZZ
@given(st.text(max_size=300))
def test_tokens_and_node_assertions_never_raise(text: str) -> None:
    assert verify_token("secret", text, {}) is None
    assert verify_assertion("secret", text, "GET", "/api/queues", node="n") is None


forwarded_messages = st.lists(
    st.one_of(
        st.tuples(
            st.binary(max_size=20) | values,
            st.dictionaries(st.text(max_size=5), values, max_size=3) | values,
            st.sampled_from(["utf8", "base64"]) | values,
            st.none() | st.integers(-1, 2**64 - 1) | values,
        ).map(list),
        values,
    ),
    max_size=3,
)
forwarded_publishes = st.builds(
    lambda *fields: list(fields),
    st.sampled_from([PUBLISH]) | values,
    st.text(max_size=10) | values,
    st.text(max_size=10) | values,
    st.integers(0, 3) | values,
    st.none() | st.text(max_size=5) | values,
    st.none() | st.integers(-1, 2**64 - 1) | values,
    forwarded_messages,
)


@FUZZ
@given(st.one_of(values, forwarded_publishes))
def test_forwarded_publishes_decode_or_answer_400_and_what_decodes_is_what_a_publish_body_gives(
    request: Any,
) -> None:
    try:
        name, user, hops, job = decode_frame(msgpack.unpackb(msgpack.packb(request), raw=False))
    except ApiError as exc:
        assert exc.status == 400
        return
    assert isinstance(name, str) and isinstance(user, str) and isinstance(hops, int)
    assert (job.publisher is None) == (job.seq is None) and 0 <= (job.seq or 0) <= INT64_MAX
    for message, expiration in job.messages:
        assert isinstance(message.body, bytes) and message.encoding in ("utf8", "base64")
        assert expiration is None or 0 <= expiration <= INT64_MAX
    msgpack.packb([[m.body, m.headers, m.encoding, expiration] for m, expiration in job.messages])
