"""The checks a declare or a bind passes before it is proposed, so that what reaches the metadata log
can always be routed: names, exchange types, and the arguments of exchanges and bindings. A refusal
is a RoutingError (HTTP 400, AMQP 406). A reserved name passes them, as the builtins may be bound and
published to: the caller refuses declaring one (HTTP 403, AMQP ACCESS_REFUSED) by `is_reserved`."""

from __future__ import annotations

import unicodedata
from typing import Any

from cluster.routing.content_filter import FILTER, FilterError, compile_filter
from cluster.routing.headers_match import KINDS, MATCH, tested
from cluster.routing.routing_table import ALTERNATE_EXCHANGE
from metadata_state.commands import InvalidCommand, check_routing_arguments
from metadata_state.records import EXCHANGE_TYPES

RESERVED_PREFIX = "amq."


class RoutingError(ValueError):
    """A name, type or argument no exchange or binding may have."""


def is_reserved(name: str) -> bool:
    """Whether `name` starts with "amq.", the prefix RabbitMQ keeps for its own exchanges."""
    return name.startswith(RESERVED_PREFIX)


def checked_exchange_name(name: str, max_length: int = 255) -> str:
    """`name`, if it is non-empty UTF-8 text of at most `max_length` bytes with no control character
    (reserved names pass: see `is_reserved`)."""
    if not name:
        raise RoutingError("an exchange name must not be empty (the default exchange cannot be named)")
    try:
        length = len(name.encode())
    except UnicodeEncodeError:
        raise RoutingError(f"exchange name {name!r} is not valid UTF-8 text") from None
    if length > max_length:
        raise RoutingError(f"exchange name {name!r} is {length} bytes of UTF-8, more than {max_length}")
    if any(unicodedata.category(character) == "Cc" for character in name):
        raise RoutingError(f"exchange name {name!r} contains a control character")
    return name


def checked_exchange_type(type: str) -> str:
    """`type`, if it is one of EXCHANGE_TYPES."""
    if type not in EXCHANGE_TYPES:
        raise RoutingError(f"unknown exchange type '{type}' (known: {', '.join(EXCHANGE_TYPES)})")
    return type


def checked_exchange_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """A copy of an exchange's `arguments`, if they are JSON values and any `alternate-exchange` is a
    non-empty string. Other arguments are kept as given, as RabbitMQ keeps those it does not know."""
    _check_json(arguments, "exchange arguments")
    if ALTERNATE_EXCHANGE in arguments:
        alternate = arguments[ALTERNATE_EXCHANGE]
        if not isinstance(alternate, str) or not alternate:
            raise RoutingError(
                f"invalid arg '{ALTERNATE_EXCHANGE}': expected an exchange's name, got {alternate!r}"
            )
    return dict(arguments)


def checked_binding_arguments(exchange_type: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A copy of a binding's `arguments`, if they are JSON values, any `x-filter` compiles (within its
    bounds: `compile_filter`), and, on a headers exchange, `x-match` is one of KINDS and every value it
    tests is a JSON scalar or None (a list or map never matches)."""
    _check_json(arguments, "binding arguments")
    if FILTER in arguments:
        try:
            compile_filter(arguments[FILTER])
        except FilterError as exc:
            raise RoutingError(f"invalid arg '{FILTER}': {exc}") from None
    if exchange_type == "headers":
        kind = arguments.get(MATCH, "all")
        if kind not in KINDS:
            raise RoutingError(f"Invalid x-match field value {kind!r}; expected {', '.join(KINDS)}")
        for name, value in tested(arguments):
            if isinstance(value, list | dict):
                raise RoutingError(f"headers binding argument {name!r} tests {value!r}: not a scalar")
    return dict(arguments)


def _check_json(arguments: dict[str, Any], what: str) -> None:
    """Raise unless `arguments` is what a routing command takes (`check_routing_arguments`: JSON values
    with string keys, finite numbers, bounded in depth and size)."""
    try:
        check_routing_arguments(arguments)
    except InvalidCommand as exc:
        raise RoutingError(f"{what}: {exc}") from exc
