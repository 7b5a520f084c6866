"""The queue operation envelope (`cluster/replication/entry_codec.py`): version 2 `[2, now_ms, command,
bodies]` (a Checkout may carry `since_ms`), version 1 `[1, now_ms, command, bodies]` and version 0
`[command bytes, bodies]` still read, and a replica applying an entry that mixes them.

Version-0 operations are built here from literal lists, as the code before version 1 wrote them."""

from __future__ import annotations

import contextlib
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.queues.queue_replica import QueueReplica
from cluster.replication.entry_codec import (
    QUEUE_OP_VERSION,
    EntryDecodeError,
    QueueOp,
    decode_queue_op,
    encode_queue_op,
    entry_body_spans,
    op_bodies,
    record_span,
)
from cluster.replication.stored_message import BodySpan, StoredMessage
from queue_state.arguments import parse_arguments
from queue_state.command_codec import NAMED_VERSIONS, CommandDecodeError
from queue_state.commands import (
    ApplyPolicy,
    Cancel,
    Checkout,
    Command,
    Discard,
    DurableCheckout,
    EndRedrive,
    Enqueue,
    EntryMeta,
    Get,
    NewMessage,
    RedriveCheckout,
    RedriveSettle,
    Return,
    Settle,
    StartRedrive,
    Tick,
    Touch,
    UpdateConfig,
)
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState, Entry, EntryKind

metas = st.builds(EntryMeta, st.integers(0, 2**63 - 1))
bodyless = st.sampled_from(
    [Tick(), Checkout("c", 3, 1, 500), Settle((1, 2), "c"), Get("h", 2, True, 7), DurableCheckout("d", 4)]
)
stored = st.builds(
    StoredMessage,
    st.binary(max_size=8),
    st.dictionaries(st.text(max_size=4), st.integers(-9, 9) | st.text(max_size=4), max_size=2),
    st.sampled_from(["utf8", "base64"]),
)


def as_wire(bodies: list[StoredMessage]) -> list[list[Any]]:
    return [[m.body, m.headers, m.encoding] for m in bodies]


def through_an_entry(op: list[Any]) -> Any:
    """The operation as a replica reads it back out of an entry's data."""
    return msgpack.unpackb(msgpack.packb([op]), raw=False)[0]


@given(metas, bodyless, st.sampled_from([0, 1, QUEUE_OP_VERSION]))
def test_an_operation_without_bodies_survives_a_round_trip_in_either_version(
    meta: EntryMeta, command: Command, version: int
) -> None:
    op = through_an_entry(encode_queue_op(meta, command, None, version))
    assert decode_queue_op(op) == QueueOp(meta, command, None)
    assert op_bodies(op) is None


VERSIONS = st.sampled_from([0, 1, 2, 3])


@given(metas, st.lists(stored, min_size=1, max_size=3), st.none() | st.just("p"), VERSIONS)
def test_an_enqueue_with_its_bodies_survives_a_round_trip_in_either_version(
    meta: EntryMeta, bodies: list[StoredMessage], publisher: str | None, version: int
) -> None:
    command = Enqueue(tuple(NewMessage(len(m.body)) for m in bodies), publisher)
    op = through_an_entry(encode_queue_op(meta, command, bodies, version))
    assert decode_queue_op(op) == QueueOp(meta, command, as_wire(bodies))
    assert op_bodies(op) == as_wire(bodies)


def test_version_1_is_the_time_the_named_command_and_the_bodies() -> None:
    body = StoredMessage(b"x", {"h": 1}, "utf8")
    op = encode_queue_op(EntryMeta(42), Enqueue((NewMessage(1),)), [body], 1)
    assert op == [1, 42, [1, {"messages": [[1, None]]}], [[b"x", {"h": 1}, "utf8"]]]
    assert encode_queue_op(EntryMeta(7), Tick(), None, 1) == [1, 7, [10, {}], None]


def test_version_2_is_version_1_under_its_own_number_with_a_readers_time() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), None, 2) == [2, 7, [10, {}], None]
    reader = Checkout("r", 5, 0, 900, since_ms=40)
    op = encode_queue_op(EntryMeta(7), reader, None, 2)
    assert op == [2, 7, [2, {"consumer": "r", "prefetch": 5, "timeout_ms": 900, "since_ms": 40}], None]
    assert decode_queue_op(through_an_entry(op)) == QueueOp(EntryMeta(7), reader, None)


def test_version_3_is_version_2_under_its_own_number_with_plain_returns_and_reasons() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), None, 3) == [3, 7, [10, {}], None]
    for command, wire in [
        (Return((4,), "c", failed=False), [6, {"ids": [4], "consumer": "c", "failed": False}]),
        (Cancel("c", failed=False), [3, {"consumer": "c", "failed": False}]),
        (Discard((4,), "c", reason="bad"), [7, {"ids": [4], "consumer": "c", "reason": "bad"}]),
    ]:
        op = encode_queue_op(EntryMeta(7), command, None, 3)
        assert op == [3, 7, wire, None]
        assert decode_queue_op(through_an_entry(op)) == QueueOp(EntryMeta(7), command, None)
        for version in (0, 1, 2):  # a node of that version would refuse the field: it is never written
            with pytest.raises(ValueError, match=r"failed|reason"):
                encode_queue_op(EntryMeta(7), command, None, version)


def test_version_4_is_version_3_under_its_own_number_with_touches_and_consumer_timeouts() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), None, 4) == [4, 7, [10, {}], None]
    timeout = UpdateConfig(parse_arguments({"x-consumer-timeout": 9000}))
    for command, wire in [
        (Touch((4, 5), "c"), [17, {"ids": [4, 5], "consumer": "c"}]),
        (timeout, [11, {"config": {"x-queue-type": "quorum", "x-consumer-timeout": 9000}}]),
    ]:
        op = encode_queue_op(EntryMeta(7), command, None, 4)
        assert op == [4, 7, wire, None]
        assert decode_queue_op(through_an_entry(op)) == QueueOp(EntryMeta(7), command, None)
        for version in (0, 1, 2, 3):  # a node of that version would refuse it: it is never written
            with pytest.raises(ValueError):
                encode_queue_op(EntryMeta(7), command, None, version)


def test_version_5_is_version_4_under_its_own_number_with_delays() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), None, 5) == [5, 7, [10, {}], None]
    retry = UpdateConfig(parse_arguments({"x-delayed-retry-type": "all"}))
    body = [StoredMessage(b"x", {}, "utf8")]
    for command, wire, bodies in [
        (Return((4,), "c", delay_ms=30), [6, {"ids": [4], "consumer": "c", "delay_ms": 30}], None),
        (retry, [11, {"config": {"x-queue-type": "quorum", "x-delayed-retry-type": "all"}}], None),
        (Enqueue((NewMessage(1, None, 50),)), [1, {"messages": [[1, None, 50]]}], body),
    ]:
        op = encode_queue_op(EntryMeta(7), command, bodies, 5)
        assert op[:3] == [5, 7, wire]
        assert decode_queue_op(through_an_entry(op)).command == command
        for version in (0, 1, 2, 3, 4):  # a node of that version would refuse it: it is never written
            with pytest.raises(ValueError):
                encode_queue_op(EntryMeta(7), command, bodies, version)


def test_version_6_is_version_5_under_its_own_number_with_priorities() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), version=6) == [6, 7, [10, {}], None]
    declared = UpdateConfig(parse_arguments({"x-max-priority": 4}))
    body = [StoredMessage(b"x", {}, "utf8")]
    for command, wire, bodies in [
        (declared, [11, {"config": {"x-queue-type": "quorum", "x-max-priority": 4}}], None),
        (Enqueue((NewMessage(1, None, None, 3),)), [1, {"messages": [[1, None, None, 3]]}], body),
    ]:
        op = encode_queue_op(EntryMeta(7), command, bodies, 6)
        assert op[:3] == [6, 7, wire]
        assert decode_queue_op(through_an_entry(op)).command == command
        for version in (0, 1, 2, 3, 4, 5):  # a node of that version would refuse it: it is never written
            with pytest.raises(ValueError):
                encode_queue_op(EntryMeta(7), command, bodies, version)


def test_version_7_is_version_6_under_its_own_number_with_policies() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), version=7) == [7, 7, [10, {}], None]
    command = ApplyPolicy("limits", {"x-max-length": 5}, 3)
    op = encode_queue_op(EntryMeta(7), command, version=7)
    assert op[:3] == [7, 7, [18, {"policy": "limits", "arguments": {"x-max-length": 5}, "revision": 3}]]
    assert decode_queue_op(through_an_entry(op)).command == command
    for version in range(7):  # a node of that version would refuse it: it is never written
        with pytest.raises(ValueError):
            encode_queue_op(EntryMeta(7), command, None, version)


def test_version_8_is_version_7_under_its_own_number_with_redrive_tasks() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), version=8) == [8, 7, [10, {}], None]
    for command, wire in [
        (
            StartRedrive("t", "orders", None, 9, 50),
            [19, {"task": "t", "target": "orders", "until_ms": 9, "rate": 50}],
        ),
        (RedriveCheckout("t", 2, 10), [20, {"task": "t", "serial": 2, "count": 10}]),
        (RedriveSettle("t", 2, 8), [22, {"task": "t", "serial": 2, "below": 8}]),
        (
            EndRedrive("t", 2, "failed", "no x-death"),
            [21, {"task": "t", "serial": 2, "state": "failed", "reason": "no x-death"}],
        ),
    ]:
        op = encode_queue_op(EntryMeta(7), command, version=8)
        assert op[:3] == [8, 7, wire]
        assert decode_queue_op(through_an_entry(op)).command == command
        for version in range(8):  # a node of that version would refuse it: it is never written
            with pytest.raises(ValueError):
                encode_queue_op(EntryMeta(7), command, None, version)


def test_version_9_is_version_8_under_its_own_number_with_auto_ack_consumers() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), version=9) == [9, 7, [10, {}], None]
    command = Checkout("c", 10, auto_ack=True)
    op = encode_queue_op(EntryMeta(7), command, version=9)
    assert op[:3] == [9, 7, [2, {"consumer": "c", "prefetch": 10, "auto_ack": True}]]
    assert decode_queue_op(through_an_entry(op)).command == command
    for version in range(9):  # a node of that version would refuse it: it is never written
        with pytest.raises(ValueError):
            encode_queue_op(EntryMeta(7), command, None, version)
    plain = encode_queue_op(EntryMeta(7), Checkout("c", 10), version=2)  # the default is left off
    assert plain[:3] == [2, 7, [2, {"consumer": "c", "prefetch": 10}]]


def _written_only_from(version: int, command: Command, wire: list, bodies: list | None = None) -> None:
    """`command` travels as `wire` in an operation of `version`, which decodes back to it; no earlier
    version writes it (its node would refuse it), nor does a node of the version before read it."""
    op = encode_queue_op(EntryMeta(7), command, bodies, version)
    assert op[:3] == [version, 7, wire]
    assert decode_queue_op(through_an_entry(op)).command == command
    for older in range(version):
        with pytest.raises(ValueError):
            encode_queue_op(EntryMeta(7), command, None, older)
    with pytest.raises(CommandDecodeError, match=f"reads up to {version - 1}"):
        decode_queue_op(through_an_entry(op), version - 1)


def test_version_13_is_version_12_under_its_own_number_with_message_groups() -> None:
    assert QUEUE_OP_VERSION == 13
    assert encode_queue_op(EntryMeta(7), Tick()) == [13, 7, [10, {}], None]
    grouped = {"x-queue-type": "quorum", "x-message-groups": True}
    _written_only_from(13, UpdateConfig(parse_arguments(grouped)), [11, {"config": grouped}])
    _written_only_from(
        13,
        Enqueue((NewMessage(3, group="order-1"), NewMessage(4))),
        [1, {"messages": [[3, None, None, 0, None, "order-1"], [4, None]]}],
        [StoredMessage(b"abc", {}, "utf8"), StoredMessage(b"abcd", {}, "utf8")],
    )


def test_version_12_is_version_11_under_its_own_number_with_dead_lettering_through_an_exchange() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), version=12) == [12, 7, [10, {}], None]
    routed = {"x-queue-type": "quorum", "x-dead-letter-exchange": "dlx", "x-dead-letter-routing-key": "dead"}
    _written_only_from(12, UpdateConfig(parse_arguments(routed)), [11, {"config": routed}])
    _written_only_from(
        12,
        ApplyPolicy("p", {"x-dead-letter-exchange": ""}, 2),
        [18, {"policy": "p", "arguments": {"x-dead-letter-exchange": ""}, "revision": 2}],
    )


def test_version_11_is_version_10_under_its_own_number_with_the_dedupe_window() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), version=11) == [11, 7, [10, {}], None]
    windowed = {"x-queue-type": "quorum", "x-dedupe-window": 60000, "x-dedupe-max": 10}
    _written_only_from(11, UpdateConfig(parse_arguments(windowed)), [11, {"config": windowed}])
    _written_only_from(
        11,
        Enqueue((NewMessage(3, None, None, 0, "order-1"),)),
        [1, {"messages": [[3, None, None, 0, "order-1"]]}],
        [StoredMessage(b"abc", {}, "utf8")],
    )


def test_version_10_is_version_9_under_its_own_number_with_the_backlog_controls() -> None:
    assert encode_queue_op(EntryMeta(7), Tick(), version=10) == [10, 7, [10, {}], None]
    paced = {"x-queue-type": "quorum", "x-dequeue-interval-ms": 50, "x-dequeue-window": "22:00-06:00"}
    for command, wire in [
        (UpdateConfig(parse_arguments(paced)), [11, {"config": paced}]),
        (
            ApplyPolicy("cap", {"x-max-unacked": 8}, 2),
            [18, {"policy": "cap", "arguments": {"x-max-unacked": 8}, "revision": 2}],
        ),
    ]:
        op = encode_queue_op(EntryMeta(7), command, version=10)
        assert op[:3] == [10, 7, wire]
        assert decode_queue_op(through_an_entry(op)).command == command
        for version in range(10):  # a node of that version would refuse it: it is never written
            with pytest.raises(ValueError):
                encode_queue_op(EntryMeta(7), command, None, version)
    with pytest.raises(CommandDecodeError, match="reads up to 9"):  # nor read by a node of version 9
        decode_queue_op(
            through_an_entry(encode_queue_op(EntryMeta(7), UpdateConfig(parse_arguments(paced)), version=10)),
            9,
        )


def test_rule_a_build_reads_no_version_newer_than_its_own() -> None:
    """A node of an older build (the whole-node simulation runs some) refuses what it cannot know: its
    replica halts there rather than guess (`cluster.replication.unreadable_entry`)."""
    op = through_an_entry(encode_queue_op(EntryMeta(7), Tick()))
    assert decode_queue_op(op, QUEUE_OP_VERSION).command == Tick()
    with pytest.raises(CommandDecodeError, match="reads up to 8"):
        decode_queue_op(op, 8)
    older = through_an_entry(encode_queue_op(EntryMeta(7), Tick(), version=8))
    assert decode_queue_op(older, 8).command == Tick()


def test_rule_returns_and_cancels_of_old_logs_replay_as_failures() -> None:
    """Every Return and Cancel written before version 3 counted a failed delivery: decoded, they still
    do (`failed` True), in every older form."""
    old = [
        [2, 7, [6, {"ids": [4], "consumer": "c"}], None],
        [1, 7, [3, {"consumer": "c"}], None],
        [msgpack.packb([6, 7, [4], "c"]), None],
        [msgpack.packb([3, 7, "c"]), None],
    ]
    commands = [decode_queue_op(through_an_entry(op)).command for op in old]
    assert commands == [
        Return((4,), "c", failed=True),
        Cancel("c"),
        Return((4,), "c"),
        Cancel("c", failed=True),
    ]
    assert all(command.failed for command in commands)  # type: ignore[union-attr]


def test_rule_a_version_1_writer_leaves_since_ms_off_and_cannot_write_a_reader() -> None:
    consumer = Checkout("c", 5, 0, 900)
    assert encode_queue_op(EntryMeta(7), consumer, None, 1) == [
        1, 7, [2, {"consumer": "c", "prefetch": 5, "timeout_ms": 900}], None
    ]  # fmt: skip
    for version in (0, 1):  # a node of that version would refuse the field: it is never written
        with pytest.raises(ValueError, match="since_ms"):
            encode_queue_op(EntryMeta(7), Checkout("r", 5, since_ms=40), None, version)


def test_rule_checkouts_written_before_version_2_replay_as_consumers_without_a_time() -> None:
    old = [1, 7, [2, {"consumer": "c", "prefetch": 5, "timeout_ms": 900}], None]
    assert decode_queue_op(through_an_entry(old)).command == Checkout("c", 5, 0, 900, None)
    v0 = [msgpack.packb([2, 7, "c", 5, 0, 900]), None]
    assert decode_queue_op(through_an_entry(v0)).command == Checkout("c", 5, 0, 900, None)


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (
            [msgpack.packb([1, 5, [[1, None]], "p", 3]), [[b"x", {}, "utf8"]]],
            QueueOp(EntryMeta(5), Enqueue((NewMessage(1),), "p", 3), [[b"x", {}, "utf8"]]),
        ),
        ([msgpack.packb([10, 9]), None], QueueOp(EntryMeta(9), Tick(), None)),
        ([msgpack.packb([14, 9, "d", 4]), None], QueueOp(EntryMeta(9), DurableCheckout("d", 4), None)),
    ],
)
def test_version_0_operations_decode_into_the_same_records_with_their_time(
    op: list, expected: QueueOp
) -> None:
    assert decode_queue_op(through_an_entry(op)) == expected


@pytest.mark.parametrize(
    "op",
    [
        [QUEUE_OP_VERSION + 1, 5, [10, {}], None],  # a version this node does not know
        [True, 5, [10, {}], None],  # a bool is not a version
        [1, -1, [10, {}], None],  # a negative time
        [1, "5", [10, {}], None],  # a time that is not an int
        [1, 5, [10, {"x": 1}], None],  # an unknown field
        [1, 5, [10, {}], [[b"x", {}, "utf8"]]],  # bodies on a command that carries none
        [1, 5, [1, {"messages": [[1, None]]}], [[b"x", {}, "utf8"], [b"y", {}, "utf8"]]],  # one body too many
        [1, 5, [1, {"messages": [[1, None]]}], [["x", {}, "utf8"]]],  # a body that is not bytes
        [1, 5, [1, {"messages": [[1, None]]}], "bodies"],
        [msgpack.packb([10, 9]), None, None],
        ["not bytes", None],
        [],
        None,
        {"op": 1},
    ],
)
def test_malformed_operations_are_rejected_with_command_decode_error(op: Any) -> None:
    with pytest.raises(CommandDecodeError):
        decode_queue_op(op)


def test_op_bodies_reads_either_version_and_nothing_else() -> None:
    bodies = [[b"x", {}, "utf8"]]
    assert op_bodies([msgpack.packb([1, 5, [[1, None]], None, None]), bodies]) == bodies
    assert op_bodies([1, 5, [1, {"messages": [[1, None]]}], bodies]) == bodies
    assert op_bodies([2, 5, [1, {"messages": [[1, None]]}], bodies]) == bodies
    assert op_bodies([3, 5, [1, {"messages": [[1, None]]}], bodies]) == bodies
    assert op_bodies([4, 5, [1, {"messages": [[1, None]]}], bodies]) == bodies
    assert op_bodies([5, 5, [1, {"messages": [[1, None, 9]]}], bodies]) == bodies
    unknown = [QUEUE_OP_VERSION + 1, 5, [], bodies]
    assert [op_bodies(op) for op in (None, [], [1, 2, 3], "op", unknown)] == [None] * 5


def test_only_known_versions_are_written() -> None:
    with pytest.raises(ValueError):
        encode_queue_op(EntryMeta(1), Tick(), None, QUEUE_OP_VERSION + 1)


@given(st.recursive(st.none() | st.integers() | st.binary(max_size=4) | st.text(max_size=4), st.lists))
def test_decoding_anything_raises_only_command_decode_error(op: Any) -> None:
    with contextlib.suppress(CommandDecodeError):
        decode_queue_op(op)


def read_span(data: bytes, span: BodySpan) -> list[Any]:
    """`[body, headers, encoding]` as a span places them in `data`."""
    body_at, body_end, headers_end, encoding = span
    return [data[body_at:body_end], msgpack.unpackb(data[body_end:headers_end], raw=False), encoding]


# bodies of every bin size (8-, 16- and 32-bit lengths), empty ones and headers of every shape
spanned = st.builds(
    StoredMessage,
    st.binary(max_size=300) | st.sampled_from([b"", b"y" * 70_000]),
    st.dictionaries(
        st.text(max_size=4), st.integers(-(2**63), 2**63 - 1) | st.text() | st.none(), max_size=20
    ),
    st.sampled_from(["utf8", "base64"]),
)


@given(
    st.lists(
        st.tuples(
            metas,
            st.none() | st.lists(spanned, min_size=1, max_size=3),
            st.sampled_from([0, *NAMED_VERSIONS]),
        ),
        max_size=4,
    )
)
def test_body_spans_place_every_body_of_an_entry_of_either_version(
    ops: list[tuple[EntryMeta, list[StoredMessage] | None, int]],
) -> None:
    wire = [
        encode_queue_op(meta, Enqueue(tuple(NewMessage(len(m.body)) for m in bodies)), bodies, version)
        if bodies is not None
        else encode_queue_op(meta, Tick(), None, version)
        for meta, bodies, version in ops
    ]
    data = msgpack.packb(wire)
    spans = entry_body_spans(data)
    assert len(spans) == len(ops)
    for (_, bodies, _), op_spans in zip(ops, spans, strict=True):
        if bodies is None:
            assert op_spans is None
        else:
            assert op_spans is not None
            assert [read_span(data, span) for span in op_spans] == as_wire(bodies)


def test_body_spans_pass_over_what_is_no_operation_and_carry_on_after_it() -> None:
    good = [1, 5, [1, {"messages": [[1, None]]}], [[b"x", {"h": 1}, "utf8"]]]
    junk: list[Any] = [
        None,
        {"op": 1},
        [],
        [QUEUE_OP_VERSION + 1, 5, [10, {}], [[b"x", {}, "utf8"]]],  # a version this node does not know
        [1, 5, [1, {}], [["x", {}, "utf8"]]],  # a body that is not bytes
        [1, 5, [1, {}], [[b"x", {}]]],  # a body without its encoding
        [1, 5, [1, {}], [[b"x", [], "utf8"]]],  # headers that are no map
        [1, 5, [1, {}], [[b"x", {}, 7]]],  # an encoding that is no text
        [b"cmd", "bodies"],
    ]
    data = msgpack.packb([*junk, good])
    *passed, (span,) = entry_body_spans(data)  # type: ignore[misc]
    assert passed == [None] * len(junk)
    assert read_span(data, span) == good[3][0]


def test_body_spans_of_what_is_no_entry_raise_entry_decode_error() -> None:
    for data in (msgpack.packb({"op": 1}), b"\x91", b"\xc1"):
        with pytest.raises(EntryDecodeError):
            entry_body_spans(data)


def test_a_record_span_places_the_body_of_a_record_of_its_own() -> None:
    record = msgpack.packb([b"z" * 300, {"k": "v"}, "base64"])
    assert read_span(record, record_span(record)) == [b"z" * 300, {"k": "v"}, "base64"]
    with pytest.raises(EntryDecodeError):
        record_span(msgpack.packb(["z", {}, "utf8"]))


def test_an_entry_mixing_versions_applies_each_operation_with_its_own_time_and_bodies(
    store: NodeStore,
) -> None:
    group_log = store.create_group("g", ConfState(voters=("n1",)))
    replica = QueueReplica("q", "g", parse_arguments({"x-message-ttl": 1000}), group_log)
    first, second = StoredMessage(b"old", {"v": 0}, "utf8"), StoredMessage(b"new", {"v": 1}, "utf8")
    ops = [
        [msgpack.packb([1, 100, [[3, None]], None, None]), as_wire([first])],  # as version 0 wrote it
        encode_queue_op(EntryMeta(900), Enqueue((NewMessage(3),)), [second]),
    ]
    entry = Entry(1, 1, EntryKind.NORMAL, msgpack.packb(ops))
    group_log.append([entry])
    store.commit()
    replica.apply(entry)
    assert replica.machine.now_ms == 900
    assert [m.enqueued_at for m in replica.machine.ready_messages()] == [100, 900]
    assert replica.bodies.get_many([1, 2]) == [first, second]
    tick = Entry(2, 1, EntryKind.NORMAL, msgpack.packb([encode_queue_op(EntryMeta(1101), Tick(), None, 0)]))
    replica.apply(tick)  # message 1 lived through 1100 (100 + ttl), message 2 through 1900
    assert [m.id for m in replica.machine.ready_messages()] == [2]
