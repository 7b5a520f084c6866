"""A publish's frames, read without pamqp's generic decoder, come out as pamqp reads them: the same
fields from any payload, valid or not, and the same refusal (FRAME_ERROR or SYNTAX_ERROR) where pamqp
refuses."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp import commands, frame
from pamqp.body import ContentBody
from pamqp.constants import FRAME_BODY, FRAME_END, FRAME_HEADER, FRAME_METHOD
from pamqp.exceptions import UnmarshalingException
from pamqp.header import ContentHeader

from api.amqp.frame_io import decode_frame, encode_frame
from api.amqp.reply_codes import FRAME_ERROR, SYNTAX_ERROR, AmqpError


def _pamqp(frame_type: int, header: bytes, rest: bytes) -> Any:
    """What pamqp makes of the frame, with decode_frame's refusals: the decoder before the fast path."""
    if rest[-1] != FRAME_END:
        return FRAME_ERROR
    if frame_type == FRAME_BODY and len(rest) == 1:
        return ContentBody(b"")
    try:
        return frame.unmarshal(header + rest)[2]
    except UnmarshalingException as exc:
        return FRAME_ERROR if exc.args and exc.args[0] == "Unknown" else SYNTAX_ERROR
    except (struct.error, ValueError, IndexError, KeyError, UnicodeDecodeError):
        return SYNTAX_ERROR


def _ours(frame_type: int, header: bytes, rest: bytes) -> Any:
    try:
        return decode_frame(frame_type, header, rest)
    except AmqpError as exc:
        return exc.code


def _fields(value: Any) -> Any:
    if isinstance(value, int):
        return value
    if isinstance(value, ContentHeader):
        props = value.properties
        return (
            "header",
            value.class_id,
            value.weight,
            value.body_size,
            [getattr(props, n) for n in props.__slots__],
        )
    if isinstance(value, ContentBody):
        return ("body", bytes(value.value))
    return (type(value).__name__, [getattr(value, n) for n in value.__slots__])


def _same(frame_type: int, payload: bytes) -> None:
    header = struct.pack(">BHI", frame_type, 1, len(payload))
    rest = payload + bytes([FRAME_END])
    assert _fields(_ours(frame_type, header, rest)) == _fields(_pamqp(frame_type, header, rest))


def _payload(value: Any) -> bytes:
    return encode_frame(value, 1)[7:-1]


SHORT = st.text(max_size=40).filter(lambda t: len(t.encode()) <= 255)


@settings(max_examples=1000)
@given(
    exchange=SHORT,
    routing_key=SHORT,
    mandatory=st.booleans(),
    immediate=st.booleans(),
    cut=st.integers(0, 90),
)
def test_a_publish_method_reads_as_pamqp_reads_it_whole_or_cut_short(
    exchange: str, routing_key: str, mandatory: bool, immediate: bool, cut: int
) -> None:
    method = commands.Basic.Publish.__new__(commands.Basic.Publish)  # any names, as a client may send
    method.ticket, method.exchange, method.routing_key = 0, exchange, routing_key
    method.mandatory, method.immediate = mandatory, immediate
    whole = struct.pack(">HHH", 60, 40, 0)
    for text in (exchange, routing_key):
        whole += bytes([len(text.encode())]) + text.encode()
    whole += bytes([mandatory | immediate << 1])
    _same(FRAME_METHOD, whole)
    _same(FRAME_METHOD, whole[: min(cut, len(whole))])


@settings(max_examples=1000)
@given(tail=st.binary(max_size=60))
def test_any_bytes_after_the_publish_method_id_read_as_pamqp_reads_them(tail: bytes) -> None:
    _same(FRAME_METHOD, struct.pack(">HH", 60, 40) + tail)


@given(
    body_size=st.integers(0, 2**40),
    properties=st.fixed_dictionaries(
        {},
        optional={
            "content_type": st.just("text/plain"),
            "delivery_mode": st.sampled_from([1, 2]),
            "headers": st.dictionaries(
                st.text(min_size=1, max_size=8), st.integers(-100, 100) | st.text(max_size=8), max_size=3
            ),
            "message_id": st.text(max_size=20),
        },
    ),
    cut=st.integers(0, 200),
)
def test_a_content_header_reads_as_pamqp_reads_it_whole_or_cut_short(
    body_size: int, properties: dict[str, Any], cut: int
) -> None:
    whole = _payload(ContentHeader(body_size=body_size, properties=commands.Basic.Properties(**properties)))
    _same(FRAME_HEADER, whole)
    _same(FRAME_HEADER, whole[: min(cut, len(whole))])


@given(payload=st.binary(max_size=100))
def test_any_header_or_body_payload_reads_as_pamqp_reads_it(payload: bytes) -> None:
    _same(FRAME_HEADER, payload)
    _same(FRAME_BODY, payload)


def test_a_frame_without_its_end_octet_is_a_frame_error() -> None:
    header = struct.pack(">BHI", FRAME_METHOD, 1, 5)
    assert _ours(FRAME_METHOD, header, struct.pack(">HH", 60, 40) + b"\x00\x00") == FRAME_ERROR
