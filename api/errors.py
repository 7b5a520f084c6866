"""One place that turns every failure into a JSON error with a fitting status; never a traceback."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from api.app_keys import STATUS
from cluster.errors import (
    BadRequest,
    ConsumerEnded,
    FormatsNotYetKnown,
    LogGap,
    NodeError,
    NodeNotFound,
    NotLeader,
    OutcomeUnknown,
    QueueConflict,
    QueueFull,
    QueueNotFound,
    Refused,
    ResourceAlarmed,
    TooLarge,
    UnknownConsumer,
)

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    """An error the API answers with `status` and `{"error": code, "reason": reason, **extra}`."""

    def __init__(self, status: int, code: str, reason: str, **extra: object) -> None:
        super().__init__(reason)
        self.status = status
        self.code = code
        self.reason = reason
        self.extra = extra


def error_json(code: str, reason: str, **extra: object) -> dict[str, object]:
    """The JSON error body of the API contract (extras that are None left out)."""
    return {"error": code, "reason": reason, **{k: v for k, v in extra.items() if v is not None}}


def error_response(status: int, code: str, reason: str, **extra: object) -> web.Response:
    """The JSON error answer of the API contract."""
    return web.json_response(error_json(code, reason, **extra), status=status)


_NODE_ERRORS: dict[type[NodeError], int] = {
    BadRequest: 400,
    QueueNotFound: 404,
    NodeNotFound: 404,
    UnknownConsumer: 404,
    ConsumerEnded: 410,
    QueueConflict: 409,
    Refused: 409,
    LogGap: 409,
    QueueFull: 507,
    TooLarge: 413,
    NotLeader: 503,
    OutcomeUnknown: 503,
    FormatsNotYetKnown: 503,
    ResourceAlarmed: 503,
}


def node_error_json(app: web.Application, exc: NodeError) -> tuple[int, dict[str, object]]:
    """The status and JSON body of a node error, adding the leader hint for 503s."""
    status = _NODE_ERRORS.get(type(exc), 500)
    extra: dict[str, object] = {}
    if isinstance(exc, NotLeader) and exc.leader:
        extra = {"leader": exc.leader, "leader_http": app[STATUS].node_http(exc.leader)}
    elif isinstance(exc, ResourceAlarmed):
        extra = {"node": exc.node, "resource": exc.resource}
    return status, error_json(exc.code, exc.reason, **extra)


def node_error_response(request: web.Request, exc: NodeError) -> web.Response:
    """Map a node error, adding the leader hint for 503s (and when to retry one that is only not known
    yet, or held back by a resource alarm)."""
    status, body = node_error_json(request.app, exc)
    response = web.json_response(body, status=status)
    if isinstance(exc, FormatsNotYetKnown | ResourceAlarmed):
        response.headers["Retry-After"] = str(exc.retry_after_s)
    return response


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Catch everything a handler raises and answer with the contract's JSON error."""
    try:
        return await handler(request)
    except ApiError as exc:
        return error_response(exc.status, exc.code, exc.reason, **exc.extra)
    except NodeError as exc:
        return node_error_response(request, exc)
    except web.HTTPRequestEntityTooLarge as exc:
        return error_response(413, "too_large", exc.text or "request body too large")
    except web.HTTPException as exc:
        if exc.status >= 400:
            code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status, "http_error")
            return error_response(exc.status, code, exc.reason)
        raise
    except json.JSONDecodeError as exc:
        return error_response(400, "bad_request", f"body is not valid JSON: {exc}")
    except ConnectionResetError:
        raise  # the client went away (aiohttp ignores it): no answer, and no error of the node's
    except Exception:
        log.exception("unhandled error serving %s %s", request.method, request.path)
        return error_response(500, "internal_error", "the node failed to serve this request")
