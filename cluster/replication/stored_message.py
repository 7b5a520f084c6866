"""A message body as the node keeps it: the bytes, the headers and the encoding it was published in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MESSAGE_ID_HEADER = "x-amqp-message-id"
"""The header that holds a message's id: AMQP's `message_id` property (`api/amqp/properties.py`), the
HTTP publish's `message_id`, what a queue's deduplication window takes a message by."""


@dataclass(slots=True)
class StoredMessage:
    """A body with its headers and the encoding the publisher used.

    Not frozen: a frozen dataclass takes three times as long to build (0.3 us more per message, and a
    publishing and delivering leader builds several per message)."""

    body: bytes | memoryview  # a body read back from the log is a view into the entry that carries it
    headers: dict[str, Any]
    encoding: str

    @property
    def message_id(self) -> str | None:
        """The message's id (`MESSAGE_ID_HEADER`), when it has one that is text."""
        value = self.headers.get(MESSAGE_ID_HEADER)
        return value if isinstance(value, str) and value else None


BodySpan = tuple[int, int, int, str]
"""Where one stored message lies in the msgpack buffer that holds it (an entry's data, or a record of its
own): its body from `[0]` to `[1]`, its headers (a msgpack map) from `[1]` to `[2]`, and its encoding."""
