"""The HTTP status and JSON error body of any failure while serving an operation outside a request's
middleware: a publish forwarded over the peer transport, an operation on the streaming connection."""

from __future__ import annotations

import logging

from aiohttp import web

from api.auth import Unauthenticated
from api.errors import ApiError, error_json, node_error_json
from cluster.errors import NodeError

log = logging.getLogger(__name__)

Answer = tuple[int, dict[str, object]]


def error_answer(app: web.Application, exc: Exception, what: str) -> Answer:
    """The answer the API gives for `exc`, raised while serving `what` (named in the log of an
    unexpected error, answered 500)."""
    if isinstance(exc, ApiError):
        return exc.status, error_json(exc.code, exc.reason, **exc.extra)
    if isinstance(exc, NodeError):
        return node_error_json(app, exc)
    if isinstance(exc, Unauthenticated):  # the user is gone (401), or this node knows no users yet (503)
        return exc.status, error_json("unauthorized" if exc.status == 401 else "not_ready", exc.reason)
    log.error("serving %s", what, exc_info=exc)
    return 500, error_json("internal_error", f"the node failed to serve {what}")
