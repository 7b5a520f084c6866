"""The errors raised by the quorumq client: one hierarchy, never a raw aiohttp exception."""

from collections.abc import Sequence
from typing import Any


class QuorumqError(Exception):
    """A request failed: `status` is the HTTP status (0 when no response arrived), `code` and `reason`
    come from the server's `{"error", "reason"}` body, `leader`/`leader_http` from a 503 leader hint,
    `retry_after_s` from its `Retry-After` (a stream's error frame: `retry_after`), when it gives one."""

    def __init__(
        self,
        status: int,
        code: str,
        reason: str,
        leader: str | None = None,
        leader_http: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {reason}" if reason else code)
        self.status = status
        self.code = code
        self.reason = reason
        self.leader = leader
        self.leader_http = leader_http
        self.retry_after_s = retry_after_s


class BadRequestError(QuorumqError):
    """400: the server rejected the request's input (for example an unknown queue argument)."""


class UnauthorizedError(QuorumqError):
    """401: credentials are missing or wrong."""


class ForbiddenError(QuorumqError):
    """403: the credentials are valid but lack the permission for this request."""


class TooManyRequestsError(QuorumqError):
    """429: a limit on concurrent use was reached (for example consumers per queue)."""


class NotFoundError(QuorumqError):
    """404: unknown queue, consumer or member."""


class ConsumerEndedError(NotFoundError):
    """410: the queue's leader ended the consumer; `code` says why: `consumer_timeout` (it held a delivery
    past its consumer timeout without a touch) or `consumer_idle` (it was not heard from for the idle
    timeout). What it held went back to the queue."""


class ConflictError(QuorumqError):
    """409: a declare with arguments different from the existing queue's, or a refused delete."""


class SeqTooOldError(ConflictError):
    """409 `seq_too_old`: a publish's seq is below its publisher's dedup window and not known to have been
    enqueued; it was not enqueued now (and retrying the same seq cannot help): publish with a new seq."""


class PayloadTooLargeError(QuorumqError):
    """413: the request or one of its messages is too large."""


class UnavailableError(QuorumqError):
    """503: the queue has no quorum or no leader right now (possibly with a leader hint)."""


class OutcomeUnknownError(UnavailableError):
    """503 `outcome_unknown`: the node sent the request on (to the leader, or into the Raft log) and lost
    track of it, so it may have taken effect. Retried only for a request safe to send again."""


class ResourceAlarmError(UnavailableError):
    """503 `resource_alarm`: a node holding a replica of the queue is in a disk or memory alarm (the
    reason names it), and the publish was held back: nothing was enqueued. Retried about once a second
    until the request's timeout."""


class OverloadedError(UnavailableError):
    """503 `overloaded`: the queue's leader holds as many publishes not yet replicated as it takes, and
    the publish was held back: nothing was enqueued. Retried after the answer's `Retry-After` until the
    request's timeout."""


class RejectedPublishError(QuorumqError):
    """507: the queue is full and its overflow mode is reject-publish; nothing was enqueued."""


class ProtocolError(QuorumqError):
    """A 2xx answer that breaks the API's contract (e.g. a publish answered with fewer ids than messages):
    the server says the request succeeded, but its answer cannot be used."""


class TransportError(QuorumqError):
    """The request reached a node but no usable answer came back (timeout, dropped connection)."""


class ForkedClientError(RuntimeError):
    """An async Client (or its HTTP session), or a SyncClient's publisher, was used in a process
    forked after it was created: its connections and event loop belong to the parent. Create a client
    (or publisher) in the child (a SyncClient does so by itself)."""


class CallTimeoutError(TransportError):
    """A blocking SyncClient call did not finish within its `call_timeout` and was cancelled (a request it
    had already sent, such as a publish, may still take effect)."""

    def __init__(self, call: str, timeout: float) -> None:
        super().__init__(0, "call_timeout", f"{call} did not finish within {timeout:g} s and was cancelled")


class NoNodeAvailableError(QuorumqError):
    """Every node was tried and none accepted a connection; `nodes` lists them."""

    def __init__(self, nodes: Sequence[str]) -> None:
        super().__init__(0, "no_node_available", "could not connect to any of " + ", ".join(nodes))
        self.nodes = list(nodes)


_ERRORS_BY_STATUS: dict[int, type[QuorumqError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: ConsumerEndedError,
    413: PayloadTooLargeError,
    429: TooManyRequestsError,
    503: UnavailableError,
    507: RejectedPublishError,
}
_ERRORS_BY_CODE: dict[tuple[int, str], type[QuorumqError]] = {
    (409, "seq_too_old"): SeqTooOldError,
    (503, "outcome_unknown"): OutcomeUnknownError,
    (503, "resource_alarm"): ResourceAlarmError,
    (503, "overloaded"): OverloadedError,
}


def error_from_response(status: int, payload: Any) -> QuorumqError:
    """Build the error for a non-2xx answer whose body is `payload` (parsed JSON or text)."""
    error_class = _ERRORS_BY_STATUS.get(status, QuorumqError)
    if isinstance(payload, dict) and "error" in payload:
        code = str(payload["error"])
        return _ERRORS_BY_CODE.get((status, code), error_class)(
            status,
            code,
            str(payload.get("reason", "")),
            leader=payload.get("leader"),
            leader_http=payload.get("leader_http"),
            retry_after_s=_seconds(payload.get("retry_after")),
        )
    text = payload if isinstance(payload, str) else ""
    return error_class(status, f"http_{status}", text.strip()[:500])


def _seconds(value: Any) -> float | None:
    """A `Retry-After` in seconds (a number, or its text), or None when it is not one."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return seconds if 0 <= seconds < float("inf") else None
