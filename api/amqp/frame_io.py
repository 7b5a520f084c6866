"""Frames on the wire: the protocol header a client opens with, frames read within the negotiated
`frame_max` and decoded by pamqp (a publish's three frames read directly, as pamqp reads them), frames
encoded by pamqp.

A frame is read in two steps: its 7-byte header (type, channel, size), then, only when the size is
within the limit, its payload and end octet. A peer that declares a frame beyond `frame_max` is refused
before it is read (FRAME_ERROR), so a hostile size costs nothing. A frame pamqp cannot decode (an
unknown type, a bad end octet, a method it does not know, fields that run past the payload) is a
FRAME_ERROR (the frame itself) or SYNTAX_ERROR (the fields of a method it knows) connection error, as
the spec asks.
"""

from __future__ import annotations

import asyncio
import struct

from pamqp import commands, frame
from pamqp.body import ContentBody
from pamqp.constants import FRAME_BODY, FRAME_END, FRAME_HEADER, FRAME_HEADER_SIZE, FRAME_METHOD
from pamqp.exceptions import UnmarshalingException
from pamqp.frame import FrameTypes
from pamqp.header import ContentHeader

from api.amqp.reply_codes import FRAME_ERROR, SYNTAX_ERROR, connection_error

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
_HEADER = struct.Struct(">BHI")
_SHORT = struct.Struct(">H")
_BASIC_PUBLISH = struct.pack(">HH", 60, 40)  # class basic, method publish


class WrongProtocol(Exception):
    """The client opened with something other than AMQP 0-9-1's protocol header: the server answers
    with its own header and closes the socket, as the spec asks."""


async def read_protocol_header(reader: asyncio.StreamReader) -> None:
    """Read the client's 8-byte protocol header; WrongProtocol for any other."""
    try:
        received = await reader.readexactly(len(PROTOCOL_HEADER))
    except asyncio.IncompleteReadError as exc:
        raise WrongProtocol(f"the connection ended after {len(exc.partial)} bytes") from None
    if received != PROTOCOL_HEADER:
        raise WrongProtocol(f"protocol header {received!r} is not AMQP 0-9-1's")


async def read_frame(reader: asyncio.StreamReader, frame_max: int) -> tuple[int, FrameTypes]:
    """The next frame and its channel; a FRAME_ERROR connection error for one larger than `frame_max`
    (header and end octet included, as the spec counts it) or one that cannot be decoded.
    asyncio.IncompleteReadError when the connection ends."""
    header = await reader.readexactly(FRAME_HEADER_SIZE)
    frame_type, channel, size = _HEADER.unpack(header)
    if size + FRAME_HEADER_SIZE + 1 > frame_max:
        raise connection_error(
            FRAME_ERROR, f"a frame of {size + FRAME_HEADER_SIZE + 1} bytes is beyond frame_max {frame_max}"
        )
    rest = await reader.readexactly(size + 1)
    return channel, decode_frame(frame_type, header, rest)


def decode_frame(frame_type: int, header: bytes, rest: bytes) -> FrameTypes:
    """The frame whose 7-byte `header` and payload with end octet (`rest`) were read.

    A publish's three frames (`basic.publish`, its content header, its body) are read here directly, as
    pamqp reads them but without its generic walk over each method's fields (a quarter of the node's time
    under AMQP publishes went to that); every other frame by pamqp."""
    if rest[-1] != FRAME_END:
        raise connection_error(FRAME_ERROR, f"a frame ends with {rest[-1]:#x}, not the frame-end octet")
    if frame_type == FRAME_BODY:
        return ContentBody(rest[:-1])  # pamqp refuses an empty body frame, which the spec allows
    try:
        if len(rest) > 1 and frame_type == FRAME_HEADER:
            content = ContentHeader()
            content.unmarshal(rest[:-1])
            return content
        if frame_type == FRAME_METHOD and rest.startswith(_BASIC_PUBLISH):
            return _publish(rest[:-1], len(_BASIC_PUBLISH))
        _, _, decoded = frame.unmarshal(header + rest)
    except UnmarshalingException as exc:
        if exc.args and exc.args[0] == "Unknown":  # pamqp names the frame it could not read, if it knew it
            raise connection_error(FRAME_ERROR, f"the frame cannot be decoded: {exc.args[-1]}") from None
        raise connection_error(SYNTAX_ERROR, f"the frame's fields cannot be decoded: {exc}") from None
    except (struct.error, ValueError, IndexError, KeyError, UnicodeDecodeError) as exc:
        raise connection_error(SYNTAX_ERROR, f"the frame's fields cannot be decoded: {exc}") from None
    return decoded


def _publish(payload: bytes, at: int) -> commands.Basic.Publish:
    """`basic.publish`'s fields from `payload[at:]` (the frame-end octet left off), read as pamqp reads
    them: a short string cut short by the payload's end reads as what there is, nothing is validated."""
    if len(payload) < at + 2:
        raise ValueError("Could not unpack short integer value")
    ticket = _SHORT.unpack_from(payload, at)[0]
    exchange, at = _short_str(payload, at + 2)
    routing_key, at = _short_str(payload, at)
    if at >= len(payload):
        raise ValueError("Could not unpack bit value")
    bits = payload[at]
    method = commands.Basic.Publish.__new__(commands.Basic.Publish)  # pamqp validates no decoded field
    method.ticket, method.exchange, method.routing_key = ticket, exchange, routing_key
    method.mandatory, method.immediate = bool(bits & 1), bool(bits & 2)
    return method


def _short_str(payload: bytes, at: int) -> tuple[str, int]:
    if at >= len(payload):
        raise ValueError("Could not unpack short string value")
    end = at + 1 + payload[at]
    return payload[at + 1 : end].decode("utf-8"), end


def encode_frame(value: FrameTypes, channel: int) -> bytes:
    """One frame on `channel`, encoded."""
    return frame.marshal(value, channel)
