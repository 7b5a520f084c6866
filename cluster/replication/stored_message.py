"""A message body as the node keeps it: the bytes, the headers and the encoding it was published in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from queue_state.message_groups import group_name_problem

MESSAGE_ID_HEADER = "x-amqp-message-id"
"""The header that holds a message's id: AMQP's `message_id` property (`api/amqp/properties.py`), the
HTTP publish's `message_id`, what a queue's deduplication window takes a message by."""
GROUP_HEADER = "x-group-id"
"""The header that holds a message's group: the HTTP and stream publish's `group`, or the header as a
publisher (an AMQP one among them) sets it; what a queue with message groups orders it by."""
EXCHANGE_HEADER = "x-amqp-exchange"
"""The header that holds the named exchange a message was routed through (AMQP's `basic.deliver`
`exchange`)."""
ROUTING_KEY_HEADER = "x-amqp-routing-key"
"""The header that holds the routing key a message was routed by through a named exchange (AMQP's
`basic.deliver` `routing-key`)."""
ROUTE_HEADERS = (EXCHANGE_HEADER, ROUTING_KEY_HEADER)


def routed_headers(headers: Mapping[str, Any], exchange: str, routing_key: str) -> dict[str, Any]:
    """`headers` of a message routed through `exchange` by `routing_key`: a named exchange and the key
    kept in EXCHANGE_HEADER and ROUTING_KEY_HEADER; through the default exchange (""), which routes by a
    queue's name, neither (`published_route` then reads the queue's name)."""
    routed = {key: value for key, value in headers.items() if key not in ROUTE_HEADERS}
    if exchange:
        routed[EXCHANGE_HEADER] = exchange
        routed[ROUTING_KEY_HEADER] = routing_key
    return routed


def published_route(headers: Mapping[str, Any], queue: str) -> tuple[str, str]:
    """The exchange and the routing key a message of `queue` was routed by: its headers'
    (`routed_headers`), else the default exchange ("") and the queue's name, as a publish to the queue
    routes. Headers a publisher set that AMQP could not carry (not text of at most 255 bytes) are not
    taken."""
    exchange, routing_key = headers.get(EXCHANGE_HEADER), headers.get(ROUTING_KEY_HEADER)
    if _short_text(exchange) and _short_text(routing_key) and exchange:
        return exchange, routing_key
    return "", queue


def _short_text(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and len(value.encode()) <= 255


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

    @property
    def group(self) -> str | None:
        """The message's group (`GROUP_HEADER`), when it has one that can name a group (a header set
        before groups were checked at the edge may not: its message then has none)."""
        value = self.headers.get(GROUP_HEADER)
        return value if value is not None and group_name_problem(value) is None else None


BodySpan = tuple[int, int, int, str]
"""Where one stored message lies in the msgpack buffer that holds it (an entry's data, or a record of its
own): its body from `[0]` to `[1]`, its headers (a msgpack map) from `[1]` to `[2]`, and its encoding."""
