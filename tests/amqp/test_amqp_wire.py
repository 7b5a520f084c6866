"""The AMQP listener's wire pieces on frames pamqp (the codec aio-pika's aiormq uses) encodes: the
protocol header, frames within `frame_max`, hostile sizes and bytes, a publish's content assembled."""

from __future__ import annotations

import asyncio
import struct

import pytest
from pamqp import commands
from pamqp.body import ContentBody
from pamqp.header import ContentHeader
from pamqp.heartbeat import Heartbeat

from api.amqp.content import ContentAssembly
from api.amqp.frame_io import PROTOCOL_HEADER, WrongProtocol, encode_frame, read_frame, read_protocol_header
from api.amqp.reply_codes import FRAME_ERROR, PRECONDITION_FAILED, SYNTAX_ERROR, UNEXPECTED_FRAME, AmqpError


def reader_of(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def test_the_protocol_header_opens_a_connection_and_anything_else_is_refused() -> None:
    await read_protocol_header(reader_of(PROTOCOL_HEADER))
    with pytest.raises(WrongProtocol, match="not AMQP 0-9-1"):
        await read_protocol_header(reader_of(b"AMQP\x01\x01\x00\x0a"))  # AMQP 1.0's
    with pytest.raises(WrongProtocol, match="after 3 bytes"):
        await read_protocol_header(reader_of(b"GET"))


async def test_frames_come_back_as_they_were_sent_with_their_channel() -> None:
    publish = commands.Basic.Publish(exchange="", routing_key="orders", mandatory=True)
    properties = commands.Basic.Properties(content_type="application/json", priority=3)
    data = b"".join(
        [
            encode_frame(publish, 5),
            encode_frame(ContentHeader(body_size=4, properties=properties), 5),
            encode_frame(ContentBody(b"\x00\x01\x02\x03"), 5),
            encode_frame(Heartbeat(), 0),
        ]
    )
    reader = reader_of(data)
    channel, method = await read_frame(reader, 4096)
    assert isinstance(method, commands.Basic.Publish) and channel == 5
    assert (method.routing_key, method.mandatory) == ("orders", True)
    channel, header = await read_frame(reader, 4096)
    assert isinstance(header, ContentHeader) and header.properties.content_type == "application/json"
    channel, body = await read_frame(reader, 4096)
    assert isinstance(body, ContentBody) and body.value == b"\x00\x01\x02\x03"
    assert isinstance((await read_frame(reader, 4096))[1], Heartbeat)
    with pytest.raises(asyncio.IncompleteReadError):
        await read_frame(reader, 4096)


async def test_a_frame_beyond_frame_max_is_refused_before_its_payload_is_read() -> None:
    declared = struct.pack(">BHI", 3, 1, 1 << 31)  # a body frame claiming 2 GiB, with nothing behind it
    with pytest.raises(AmqpError) as refused:
        await read_frame(reader_of(declared), 131072)
    assert (refused.value.code, refused.value.connection) == (FRAME_ERROR, True)
    assert "beyond frame_max 131072" in refused.value.text


async def test_hostile_frames_are_connection_errors_not_crashes() -> None:
    good = encode_frame(commands.Queue.Declare(queue="q"), 1)
    bad_end = good[:-1] + b"\x00"
    unknown_type = b"\x09" + good[1:]
    unknown_method = good[:7] + struct.pack(">HH", 50, 99) + good[11:]
    cut_short = struct.pack(">BHI", 1, 1, 5) + struct.pack(">HH", 50, 10) + b"\x00\xce"
    for data, code in (
        (bad_end, FRAME_ERROR),
        (unknown_type, FRAME_ERROR),
        (unknown_method, FRAME_ERROR),
        (cut_short, SYNTAX_ERROR),
    ):
        with pytest.raises(AmqpError) as refused:
            await read_frame(reader_of(data), 4096)
        assert (refused.value.code, refused.value.connection) == (code, True), data


async def test_an_empty_body_frame_is_a_frame() -> None:
    empty = struct.pack(">BHI", 3, 1, 0) + b"\xce"
    _, body = await read_frame(reader_of(empty), 4096)
    assert isinstance(body, ContentBody) and body.value == b""


def test_content_is_the_method_its_header_and_its_bodies_in_that_order() -> None:
    assembly = ContentAssembly(max_body_bytes=100)
    publish = commands.Basic.Publish(routing_key="q")
    assembly.start(publish)
    assert assembly.expecting
    assert assembly.header(ContentHeader(body_size=5, properties=commands.Basic.Properties())) is None
    assert assembly.body(ContentBody(b"ab")) is None
    content = assembly.body(ContentBody(b"cde"))
    assert content is not None and (content.method, content.body) == (publish, b"abcde")
    assert not assembly.expecting
    assembly.start(publish)
    empty = assembly.header(ContentHeader(body_size=0, properties=commands.Basic.Properties()))
    assert empty is not None and empty.body == b""


def test_content_out_of_order_is_an_unexpected_frame() -> None:
    properties = commands.Basic.Properties()
    assembly = ContentAssembly(max_body_bytes=100)
    with pytest.raises(AmqpError, match=r"no basic\.publish") as refused:
        assembly.header(ContentHeader(body_size=1, properties=properties))
    assert (refused.value.code, refused.value.connection) == (UNEXPECTED_FRAME, True)
    with pytest.raises(AmqpError, match="no content header"):
        assembly.body(ContentBody(b"x"))
    assembly.start(commands.Basic.Publish(routing_key="q"))
    with pytest.raises(AmqpError, match="before the last one's content"):
        assembly.start(commands.Basic.Publish(routing_key="q"))
    assembly.header(ContentHeader(body_size=1, properties=properties))
    with pytest.raises(AmqpError, match="beyond the 1 announced"):
        assembly.body(ContentBody(b"xy"))


def test_a_body_beyond_the_limit_is_refused_at_its_header_on_the_channel_only() -> None:
    assembly = ContentAssembly(max_body_bytes=10)
    assembly.start(commands.Basic.Publish(routing_key="big"))
    with pytest.raises(AmqpError) as refused:
        assembly.header(ContentHeader(body_size=11, properties=commands.Basic.Properties()))
    assert (refused.value.code, refused.value.connection) == (PRECONDITION_FAILED, False)
    assert refused.value.text.startswith(
        "PRECONDITION_FAILED - message size 11 is larger than configured max size 10"
    )
    assert not assembly.expecting
