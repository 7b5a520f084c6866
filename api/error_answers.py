"""One mapping from any failure to the API's answer, its HTTP status and JSON error body: for a request
(`error_middleware`), an operation on the streaming connection, and a publish forwarded over the peer
transport (`error_answer`). Never a traceback."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from api.app_keys import STATUS
from api.auth import Unauthenticated
from api.errors import ApiError, error_json
from api.json_codec import json_answer
from api.login_throttle import LoginThrottled
from cluster.errors import (
    BadRequest,
    ConsumerEnded,
    FormatsNotYetKnown,
    LogGap,
    NodeError,
    NodeNotFound,
    NotLeader,
    OutcomeUnknown,
    Overloaded,
    QueueConflict,
    QueueFull,
    QueueNotFound,
    Refused,
    ResourceAlarmed,
    TooLarge,
    UnknownConsumer,
)
from cluster.membership.group_changes import MembershipRefused

log = logging.getLogger(__name__)

Answer = tuple[int, dict[str, object]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

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
    Overloaded: 503,
}
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}
_RETRY_AFTER_S = {
    error.code: error.retry_after_s for error in (FormatsNotYetKnown, ResourceAlarmed, Overloaded)
}


def error_answer(app: web.Application, exc: Exception, what: str) -> Answer:
    """The status and JSON body the API answers `exc` with, raised while serving `what` (named in the log
    and the answer of an unexpected error, a 500)."""
    if isinstance(exc, ApiError):
        return exc.status, error_json(exc.code, exc.reason, **exc.extra)
    if isinstance(exc, NodeError):
        return _NODE_ERRORS.get(type(exc), 500), error_json(exc.code, exc.reason, **_hints(app, exc))
    if isinstance(exc, MembershipRefused):  # a membership change not possible now (`last_node`, ...)
        return 409, error_json(exc.code, exc.reason)
    if isinstance(exc, Unauthenticated):  # wrong or missing credentials (401), or no users known yet (503)
        return exc.status, error_json("unauthorized" if exc.status == 401 else "not_ready", exc.reason)
    if isinstance(exc, LoginThrottled):
        return 429, error_json("too_many_requests", str(exc))
    if isinstance(exc, web.HTTPException):  # no route, no such method, a body beyond client_max_size
        reason = exc.text if isinstance(exc, web.HTTPRequestEntityTooLarge) and exc.text else exc.reason
        return exc.status, error_json(_HTTP_CODES.get(exc.status, "http_error"), reason)
    if isinstance(exc, json.JSONDecodeError):
        return 400, error_json("bad_request", f"body is not valid JSON: {exc}")
    log.error("serving %s", what, exc_info=exc)
    return 500, error_json("internal_error", f"the node failed to serve {what}")


def _hints(app: web.Application, exc: NodeError) -> dict[str, object]:
    """What an answer to a node error adds: where the leader is (a 503 that knows it), which node is in
    which resource alarm, which queue is overloaded."""
    if isinstance(exc, NotLeader) and exc.leader:
        return {"leader": exc.leader, "leader_http": app[STATUS].node_http(exc.leader)}
    if isinstance(exc, ResourceAlarmed):
        return {"node": exc.node, "resource": exc.resource}
    if isinstance(exc, Overloaded):
        return {"queue": exc.queue}
    return {}


def retry_after_s(status: int, body: dict[str, object]) -> int | None:
    """The seconds the error answered as `status` and `body` says to wait before a retry, if it says
    (`Retry-After` on HTTP, `retry_after` in a stream's error frame)."""
    return _RETRY_AFTER_S.get(str(body.get("error"))) if status >= 400 else None


def passed_on_answer(status: int, body: dict[str, object]) -> web.Response:
    """The answer `[status, body]` as a response with the `Retry-After` its error says: another node's
    answer to a request passed on to it (a forwarded publish) as that node would have given it, or an
    answer made without an exception (a paused node's)."""
    response = json_answer(body, status=status)
    retry_after = retry_after_s(status, body)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answer whatever the handler (or a middleware inside this one) raises as `error_answer` says, with
    `Retry-After` when the error says when to retry."""
    try:
        return await handler(request)
    except ConnectionResetError:
        raise  # the client went away (aiohttp ignores it): no answer, and no error of the node's
    except Exception as exc:
        if isinstance(exc, web.HTTPException) and exc.status < 400:
            raise  # not an error (a redirect)
        status, body = error_answer(request.app, exc, f"{request.method} {request.path}")
        response = web.json_response(body, status=status)
        retry_after = exc.retry_after_s if isinstance(exc, LoginThrottled) else retry_after_s(status, body)
        if retry_after is not None:
            response.headers["Retry-After"] = str(retry_after)
        return response
