"""The URL paths of exchanges and bindings, in the shapes of RabbitMQ's management API, in VHOST: the one
virtual host a cluster has (`/`, written `%2F` in a path)."""

from typing import Literal
from urllib.parse import quote

VHOST = "/"
DEFAULT_EXCHANGE_IN_A_PATH = "amq.default"
"""How a path names the default exchange, "" (it routes each message to the queue its routing key names)."""
Destination = Literal["q", "e"]
"""What a binding leads to, as its path says: a queue or an exchange."""


def _segments(*segments: str) -> str:
    return "/".join(quote(segment, safe="") for segment in segments)


def exchanges_path() -> str:
    """The path listing VHOST's exchanges."""
    return "/api/exchanges/" + _segments(VHOST)


def exchange_path(name: str, *parts: str) -> str:
    """The path of exchange `name` ("" the default one), and of `parts` below it."""
    return "/api/exchanges/" + _segments(VHOST, name or DEFAULT_EXCHANGE_IN_A_PATH, *parts)


def bindings_path() -> str:
    """The path listing VHOST's bindings."""
    return "/api/bindings/" + _segments(VHOST)


def binding_path(source: str, kind: Destination, destination: str, properties_key: str | None = None) -> str:
    """The path of the bindings from exchange `source` to the queue or exchange (`kind`) `destination`,
    and with a `properties_key`, of that one binding."""
    one = () if properties_key is None else (properties_key,)
    return "/api/bindings/" + _segments(VHOST, "e", source, kind, destination, *one)
