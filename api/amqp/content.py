"""A channel's message content: a `basic.publish` method frame, then its content header, then body
frames until the header's size is reached, assembled into one published message.

The frames of one message come in that order on their channel, with no other method between them; any
other order is an UNEXPECTED_FRAME connection error, as the spec asks. A body size beyond the node's
`max_message_bytes` is refused when the header announces it (a PRECONDITION_FAILED channel error, as
RabbitMQ refuses a message above its `max_message_size`), before any body frame is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from pamqp import commands
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

from api.amqp.reply_codes import PRECONDITION_FAILED, UNEXPECTED_FRAME, channel_error, connection_error


@dataclass(frozen=True, slots=True)
class Content:
    """A published message as it arrived: its method, properties and body."""

    method: commands.Basic.Publish
    properties: commands.Basic.Properties
    body: bytes


class ContentAssembly:
    """Assembles the content of one channel's publishes, one message at a time."""

    def __init__(self, max_body_bytes: int) -> None:
        self._max_body_bytes = max_body_bytes
        self._method: commands.Basic.Publish | None = None
        self._header: ContentHeader | None = None
        self._parts: list[bytes] = []
        self._received = 0

    @property
    def expecting(self) -> bool:
        """Whether a publish's content is still to come (a method frame now is out of order)."""
        return self._method is not None

    def start(self, method: commands.Basic.Publish) -> None:
        """A `basic.publish` arrived: its content follows."""
        if self._method is not None:
            raise connection_error(UNEXPECTED_FRAME, "a basic.publish arrived before the last one's content")
        self._method = method

    def header(self, header: ContentHeader) -> Content | None:
        """The content header arrived: the message when its body is empty, else None (bodies follow)."""
        if self._method is None or self._header is not None:
            raise connection_error(
                UNEXPECTED_FRAME, "a content header arrived with no basic.publish before it"
            )
        if header.body_size > self._max_body_bytes:
            method, self._method = self._method, None
            raise channel_error(
                PRECONDITION_FAILED,
                f"message size {header.body_size} is larger than configured max size {self._max_body_bytes}"
                f" (publish to '{method.routing_key}')",
            )
        self._header = header
        return self._complete() if header.body_size == 0 else None

    def body(self, body: ContentBody) -> Content | None:
        """A body frame arrived: the message once its body is whole, else None."""
        if self._header is None:
            raise connection_error(
                UNEXPECTED_FRAME, "a content body arrived with no content header before it"
            )
        self._received += len(body.value)
        if self._received > self._header.body_size:
            raise connection_error(
                UNEXPECTED_FRAME,
                f"the content bodies hold {self._received} bytes,"
                f" beyond the {self._header.body_size} announced",
            )
        self._parts.append(bytes(body.value))
        return self._complete() if self._received == self._header.body_size else None

    def _complete(self) -> Content:
        assert self._method is not None and self._header is not None
        content = Content(self._method, self._header.properties, b"".join(self._parts))
        self._method, self._header, self._parts, self._received = None, None, [], 0
        return content
