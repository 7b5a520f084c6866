"""The URL paths of what belongs to a virtual host (queues, policies, permissions, exchanges, bindings),
in the shapes of RabbitMQ's management API (`/`, the default vhost, is written `%2F` in a path)."""

from typing import Literal
from urllib.parse import quote

DEFAULT_VHOST = "/"
DEFAULT_EXCHANGE_IN_A_PATH = "amq.default"
"""How a path names the default exchange, "" (it routes each message to the queue its routing key names)."""
Destination = Literal["q", "e"]
"""What a binding leads to, as its path says: a queue or an exchange."""


def _segments(*segments: str) -> str:
    return "/".join(quote(segment, safe="") for segment in segments)


def exchanges_path(vhost: str) -> str:
    """The path listing `vhost`'s exchanges."""
    return "/api/exchanges/" + _segments(vhost)


def exchange_path(vhost: str, name: str, *parts: str) -> str:
    """The path of exchange `name` ("" the default one) of `vhost`, and of `parts` below it."""
    return "/api/exchanges/" + _segments(vhost, name or DEFAULT_EXCHANGE_IN_A_PATH, *parts)


def bindings_path(vhost: str) -> str:
    """The path listing `vhost`'s bindings."""
    return "/api/bindings/" + _segments(vhost)


def binding_path(
    vhost: str, source: str, kind: Destination, destination: str, properties_key: str | None = None
) -> str:
    """The path of the bindings of `vhost` from exchange `source` to the queue or exchange (`kind`)
    `destination`, and with a `properties_key`, of that one binding."""
    one = () if properties_key is None else (properties_key,)
    return "/api/bindings/" + _segments(vhost, "e", source, kind, destination, *one)


def vhost_path(kind: str, vhost: str, name: str, *parts: str) -> str:
    """The path of `name` of `vhost` among `/api/{kind}/`, and of `parts` below it: RabbitMQ's
    `/api/{kind}/{vhost}/{name}`, or for the default vhost the one-segment `/api/{kind}/{name}`, which
    every version of the server serves."""
    named = (name,) if vhost == DEFAULT_VHOST else (vhost, name)
    return f"/api/{kind}/" + _segments(*named, *parts)


def permission_path(vhost: str, user: str) -> str:
    """The path of `user`'s permissions in `vhost`."""
    return "/api/permissions/" + _segments(vhost, user)


def queue_path(vhost: str, queue: str, *parts: str) -> str:
    """The URL path of queue `queue` of `vhost` (`vhost_path`), and of `parts` below it."""
    return vhost_path("queues", vhost, queue, *parts)
