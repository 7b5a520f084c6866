"""Read your own routing changes on any node: an answer to a declare, delete, bind or unbind of an
exchange names the metadata's routing revision after it (`ROUTING_REVISION_HEADER`), and a publish to an
exchange that carries it is routed only once the node it reached applied that revision
(docs/internals/design-routing.md, "Read your writes")."""

from __future__ import annotations

import asyncio

from aiohttp import web

from api.app_keys import METADATA
from api.errors import ApiError
from cluster.metadata.metadata_view import MetadataView

ROUTING_REVISION_HEADER = "X-Quorumq-Routing-Revision"
CATCH_UP_S = 5.0


def with_revision(response: web.StreamResponse, metadata: MetadataView) -> web.StreamResponse:
    """`response`, naming the routing revision this node applied."""
    response.headers[ROUTING_REVISION_HEADER] = str(metadata.routing_revision)
    return response


async def await_revision(request: web.Request) -> None:
    """Return once this node applied the routing revision the request names (`revision_of`)."""
    await applied_revision(request.app[METADATA], revision_of(request))


def revision_of(request: web.Request) -> int | None:
    """The routing revision the request names, None for none; 400 for one that is no number."""
    raw = request.headers.get(ROUTING_REVISION_HEADER)
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 19:
        raise ApiError(400, "bad_request", f"{ROUTING_REVISION_HEADER} must be a non-negative integer")
    return int(raw)


async def applied_revision(metadata: MetadataView, revision: int | None) -> None:
    """Return once this node applied routing `revision` (at once for None); 503 `metadata_behind` after
    CATCH_UP_S without it."""
    if revision is not None and not await caught_up(metadata, revision, CATCH_UP_S):
        raise ApiError(
            503,
            "metadata_behind",
            f"this node has not applied routing revision {revision} yet; try again, or another node",
        )


async def caught_up(metadata: MetadataView, revision: int, within_s: float) -> bool:
    """Whether this node applied routing `revision`, waiting up to `within_s` for it."""
    if metadata.routing_revision >= revision:
        return True
    reached = asyncio.get_running_loop().create_future()

    def check() -> None:
        if metadata.routing_revision >= revision and not reached.done():
            reached.set_result(None)

    stop = metadata.watch(check)
    try:
        await asyncio.wait_for(reached, within_s)
    except TimeoutError:
        return False
    finally:
        stop()
    return True
