"""The vhost and exchange a routing endpoint's path names, checked, and the format gate of routing
changes."""

from __future__ import annotations

from aiohttp import web

from api.app_keys import FORMATS
from api.errors import ApiError
from api.validation import bad
from cluster.routing.exchange_checks import RoutingError, checked_exchange_name
from metadata_state.codec import EXCHANGE_CODEC_VERSION
from metadata_state.records import DEFAULT_VHOST

DEFAULT_EXCHANGE_PATH_NAME = "amq.default"
"""How RabbitMQ's management API names the default exchange ("") in a path."""


def vhost_of(request: web.Request) -> str:
    """The vhost the path names (`%2F` is `/`): 404 for any other until vhosts land."""
    vhost = request.match_info["vhost"]
    if vhost != DEFAULT_VHOST:
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


def upgrade_refused() -> ApiError:
    """The answer to a routing change refused because a node said since the check that it reads an older
    metadata codec."""
    return ApiError(409, "upgrade_in_progress", "a node of the cluster reads no exchanges or bindings yet")
