"""Every HTTP request gets an id, for the logs it causes and the answer it gets: the caller's
`X-Request-Id` when it is a sane one (so a proxy's or a forwarding node's id carries through), else a new
one. The id (and the queue the route names) is set in `cluster.node_logging` for the request's records,
sent on to other nodes with the calls made for the request (`api.auth.vouch`), and returned in the
answer's header."""

from __future__ import annotations

import re
import uuid

from aiohttp import web
from aiohttp.typedefs import Handler

from api.validation import QUEUE_NAME, is_vhost_name
from cluster import node_logging
from metadata_state.vhost_names import DEFAULT_VHOST, qualified

REQUEST_ID_HEADER = "X-Request-Id"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,64}")


@web.middleware
async def request_id_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Set the request's id and queue for its logs, and answer the id in the `X-Request-Id` header."""
    given = request.headers.get(REQUEST_ID_HEADER, "")
    current = given if _SANE.fullmatch(given) else uuid.uuid4().hex[:16]
    node_logging.request_id.set(current)
    named = request.match_info.get("q")  # the route is matched before the middlewares
    vhost = request.match_info.get("vhost", DEFAULT_VHOST)
    logged = None  # no forged log line: only a well-formed name is logged
    if named is not None and QUEUE_NAME.fullmatch(named) and is_vhost_name(vhost):
        logged = qualified(vhost, named)
    node_logging.queue.set(logged)
    response = await handler(request)
    if not response.prepared:
        response.headers[REQUEST_ID_HEADER] = current
    return response
