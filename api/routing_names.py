"""The vhost and exchange a routing endpoint's path names, checked, and the format gate of routing
changes."""

from __future__ import annotations

from collections.abc import Awaitable

from aiohttp import web

from api.app_keys import FORMATS, METADATA
from api.errors import ApiError
from api.validation import bad, check_vhost_name
from cluster.metadata.metadata_view import MetadataView
from cluster.routing.exchange_checks import RoutingError, checked_exchange_name
from metadata_state.codec import EXCHANGE_CODEC_VERSION
from metadata_state.commands import InvalidCommand
from metadata_state.replies import Reply

MAX_ROUTING_KEY_BYTES = 255
"""AMQP's short string: the longest routing key, in bytes of UTF-8."""
DEFAULT_EXCHANGE_PATH_NAME = "amq.default"
"""How RabbitMQ's management API names the default exchange ("") in a path."""


def vhost_of(request: web.Request) -> str:
    """The vhost the path names (`%2F` is `/`): 400 for a malformed name, 404 for one that does not
    exist."""
    return existing_vhost(request.app[METADATA], request.match_info["vhost"])


def existing_vhost(metadata: MetadataView, vhost: str) -> str:
    """`vhost`: 400 for a malformed name (`check_vhost_name`), 404 for one that does not exist."""
    if not metadata.has_vhost(check_vhost_name(vhost)):
        raise ApiError(404, "not_found", f"no vhost '{vhost}'")
    return vhost


def exchange_of(request: web.Request, default: bool = True) -> str:
    """The exchange the path names: "" for the default exchange (`amq.default`), which only a route with
    `default` takes (403 otherwise: it cannot be declared, deleted or bound); 400 for a malformed name."""
    name = request.match_info["exchange"]
    if name in ("", DEFAULT_EXCHANGE_PATH_NAME):
        if not default:
            raise ApiError(403, "forbidden", "the default exchange cannot be declared, deleted or bound")
        return ""
    try:
        return checked_exchange_name(name)
    except RoutingError as exc:
        raise bad(str(exc)) from exc


def require_read_everywhere(request: web.Request) -> None:
    """409 `upgrade_in_progress` until every node reads the metadata commands of exchanges and bindings
    (503 `formats_not_yet_known` while a node has not said what it reads)."""
    request.app[FORMATS].require_metadata(EXCHANGE_CODEC_VERSION, "no exchanges")


async def proposed(change: Awaitable[Reply]) -> Reply:
    """The metadata's reply to a routing change: 400 for arguments no command takes (`InvalidCommand`:
    too deep, too many values), 409 `upgrade_in_progress` when a node said since the check that it reads
    an older metadata codec (the door cannot write the command)."""
    try:
        return await change
    except InvalidCommand as exc:
        raise bad(str(exc)) from exc
    except ValueError as exc:
        raise ApiError(
            409, "upgrade_in_progress", "a node of the cluster reads no exchanges or bindings yet"
        ) from exc
