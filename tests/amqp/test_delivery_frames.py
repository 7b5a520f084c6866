"""The delivery frames packed by hand are what pamqp reads back as the row's delivery, whatever the row, and
the bytes pamqp marshals for the same frames but for float headers (written as doubles, which pamqp does
not write: `api/amqp/field_tables.py`)."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pamqp import commands
from pamqp.body import ContentBody
from pamqp.frame import unmarshal
from pamqp.header import ContentHeader

from api.amqp.delivery_frames import content_frames, deliver_frame, encoded_properties, row_content
from api.amqp.frame_io import encode_frame
from api.amqp.properties import delivery_properties, marshalled_delivery_properties
from cluster.queues.queue_results import MessageRow

FRAME_MIN = 4096


def _pamqp_content(channel: int, row: MessageRow, frame_max: int) -> bytes:
    body = bytes(row.body)
    room = frame_max - 8
    frames: list[Any] = [ContentHeader(body_size=len(body), properties=delivery_properties(row))]
    frames += [ContentBody(body[at : at + room]) for at in range(0, len(body), room)]
    return b"".join(encode_frame(f, channel) for f in frames)


def _row(
    headers: dict[str, Any], body: bytes = b"m", delivery_count: int = 0, priority: int = 0
) -> MessageRow:
    return MessageRow(
        7, body, "bytes", headers, delivery_count, delivery_count > 0, 1_700_000_000_000, None, 0, priority
    )


@given(
    channel=st.integers(1, 65535),
    consumer_tag=st.text(max_size=60),
    delivery_tag=st.integers(1, 2**63 - 1),
    redelivered=st.booleans(),
    exchange=st.from_regex(r"[a-zA-Z0-9_.:-]{0,60}", fullmatch=True),  # what pamqp lets through
    routing_key=st.text(max_size=60),
)
def test_a_deliver_frame_is_pamqps(
    channel: int, consumer_tag: str, delivery_tag: int, redelivered: bool, exchange: str, routing_key: str
) -> None:
    method = commands.Basic.Deliver(consumer_tag, delivery_tag, redelivered, exchange, routing_key)
    packed = deliver_frame(channel, consumer_tag, delivery_tag, redelivered, exchange, routing_key)
    assert packed == encode_frame(method, channel)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
PROPERTY_HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "x-amqp-content-type": st.just("application/json"),
        "x-amqp-delivery-mode": st.sampled_from([1, 2]),
        "x-amqp-correlation-id": st.text(max_size=20),
        "x-amqp-message-id": st.text(max_size=20),
        "x-amqp-timestamp": st.integers(0, 2**40),
    },
)


@given(
    headers=PROPERTY_HEADERS,
    extra=st.dictionaries(
        st.text(min_size=1, max_size=10).filter(lambda k: not k.startswith("x-amqp")), JSON_VALUES, max_size=4
    ),
    body=st.binary(max_size=3 * FRAME_MIN),
    delivery_count=st.integers(0, 3),
    priority=st.integers(0, 300),
)
def test_a_rows_content_frames_are_pamqps_split_at_frame_max(
    headers: dict[str, Any], extra: dict[str, Any], body: bytes, delivery_count: int, priority: int
) -> None:
    row = _row({**headers, **extra}, body, delivery_count, priority)
    packed = row_content(3, row, FRAME_MIN)
    header, *bodies = _read_back(packed)
    assert header.properties == _as_pamqp_reads_its_own_but_the_headers(row)
    assert header.body_size == len(body) == sum(len(b.value) for b in bodies)
    assert b"".join(b.value for b in bodies) == body
    if not _holds_a_float(extra):
        assert packed == _pamqp_content(3, row, FRAME_MIN)
    again = _row({**headers, **extra}, memoryview(body), delivery_count, priority)
    assert row_content(3, again, FRAME_MIN) == packed  # the kept properties


def _as_pamqp_reads_its_own_but_the_headers(row: MessageRow) -> commands.Basic.Properties:
    """The row's properties as pamqp reads back what it marshals (it drops empty strings), with the
    headers as they are: pamqp writes their floats in 32 bits, or fails beyond that type's range."""
    properties = delivery_properties(row)
    headers, properties.headers = properties.headers, None
    marshalled = encode_frame(ContentHeader(body_size=0, properties=properties), 1)
    read: commands.Basic.Properties = _read_back(marshalled)[0].properties
    read.headers = headers
    return read


def _read_back(packed: bytes) -> list[Any]:
    """The frames pamqp reads from `packed`."""
    frames = []
    while packed:
        size, _, frame = unmarshal(packed)
        frames.append(frame)
        packed = packed[size:]
    return frames


def _holds_a_float(value: Any) -> bool:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return any(map(_holds_a_float, value))
    return isinstance(value, float)


def test_kept_properties_tell_apart_values_python_holds_equal() -> None:
    for value in (1, True, 1.0, "1", 0.0, -0.0, 0, False):
        row = _row({"n": value})
        assert encoded_properties(row) == marshalled_delivery_properties(row)
    assert b"nd" + struct.pack(">d", -0.0) in encoded_properties(_row({"n": -0.0}))


def test_an_empty_body_has_a_header_frame_and_no_body_frame() -> None:
    row = _row({}, b"")
    assert row_content(1, row, FRAME_MIN) == _pamqp_content(1, row, FRAME_MIN)
    assert content_frames(1, b"\x00\x00", b"", FRAME_MIN).count(b"\xce") == 1
