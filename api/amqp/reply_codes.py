"""AMQP 0-9-1 reply codes, the errors that carry them, and how quorumq's answers translate into them.

A channel error closes the channel (`channel.close`), a connection error closes the connection
(`connection.close`), with the code and a text in RabbitMQ's form: `NAME - what happened`. quorumq's
own refusals (an HTTP status and an error code, as every edge answers them) become the code RabbitMQ
gives for the same situation (`for_answer`).
"""

from __future__ import annotations

from typing import Any

REPLY_SUCCESS = 200
CONTENT_TOO_LARGE = 311
NO_ROUTE = 312
NO_CONSUMERS = 313
CONNECTION_FORCED = 320
INVALID_PATH = 402
ACCESS_REFUSED = 403
NOT_FOUND = 404
RESOURCE_LOCKED = 405
PRECONDITION_FAILED = 406
FRAME_ERROR = 501
SYNTAX_ERROR = 502
COMMAND_INVALID = 503
CHANNEL_ERROR = 504
UNEXPECTED_FRAME = 505
RESOURCE_ERROR = 506
NOT_ALLOWED = 530
NOT_IMPLEMENTED = 540
INTERNAL_ERROR = 541

NAMES = {
    REPLY_SUCCESS: "REPLY_SUCCESS",
    CONTENT_TOO_LARGE: "CONTENT_TOO_LARGE",
    NO_ROUTE: "NO_ROUTE",
    NO_CONSUMERS: "NO_CONSUMERS",
    CONNECTION_FORCED: "CONNECTION_FORCED",
    INVALID_PATH: "INVALID_PATH",
    ACCESS_REFUSED: "ACCESS_REFUSED",
    NOT_FOUND: "NOT_FOUND",
    RESOURCE_LOCKED: "RESOURCE_LOCKED",
    PRECONDITION_FAILED: "PRECONDITION_FAILED",
    FRAME_ERROR: "FRAME_ERROR",
    SYNTAX_ERROR: "SYNTAX_ERROR",
    COMMAND_INVALID: "COMMAND_INVALID",
    CHANNEL_ERROR: "CHANNEL_ERROR",
    UNEXPECTED_FRAME: "UNEXPECTED_FRAME",
    RESOURCE_ERROR: "RESOURCE_ERROR",
    NOT_ALLOWED: "NOT_ALLOWED",
    NOT_IMPLEMENTED: "NOT_IMPLEMENTED",
    INTERNAL_ERROR: "INTERNAL_ERROR",
}

CONNECTION_LEVEL = frozenset(
    {
        CONNECTION_FORCED,
        INVALID_PATH,
        FRAME_ERROR,
        SYNTAX_ERROR,
        COMMAND_INVALID,
        CHANNEL_ERROR,
        UNEXPECTED_FRAME,
        RESOURCE_ERROR,
        NOT_ALLOWED,
        NOT_IMPLEMENTED,
        INTERNAL_ERROR,
    }
)
"""The codes the spec makes connection errors; NOT_IMPLEMENTED among them, though RabbitMQ closes only
the channel for a method it does not implement (`AmqpError.connection` says which an error is)."""

MAX_TEXT = 255  # a reply text is a short string


class AmqpError(Exception):
    """An error that closes the channel (or, with `connection`, the connection) with `code`."""

    def __init__(self, code: int, reason: str, *, connection: bool = False) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.connection = connection

    @property
    def text(self) -> str:
        """The reply text, as RabbitMQ words it: `NAME - reason`, cut to a short string's length."""
        text = f"{NAMES.get(self.code, str(self.code))} - {self.reason}"
        encoded = text.encode()
        return text if len(encoded) <= MAX_TEXT else encoded[:MAX_TEXT].decode(errors="ignore")


def channel_error(code: int, reason: str) -> AmqpError:
    """An error that closes only the channel."""
    return AmqpError(code, reason)


def connection_error(code: int, reason: str) -> AmqpError:
    """An error that closes the connection."""
    return AmqpError(code, reason, connection=True)


_BY_ERROR_CODE = {
    "too_many_consumers": RESOURCE_ERROR,
    "too_many_requests": RESOURCE_ERROR,
    "unauthorized": ACCESS_REFUSED,
}
_BY_STATUS = {
    400: PRECONDITION_FAILED,  # a bad argument or property
    401: ACCESS_REFUSED,
    403: ACCESS_REFUSED,
    404: NOT_FOUND,
    409: PRECONDITION_FAILED,  # inequivalent arguments, a delete's if-empty or if-unused that failed
    410: NOT_FOUND,  # a consumer its queue's leader ended
    413: PRECONDITION_FAILED,  # a message beyond the node's max_message_bytes
    422: PRECONDITION_FAILED,
    429: RESOURCE_ERROR,
}


def for_answer(status: int, body: dict[str, Any]) -> AmqpError:
    """The channel error for a refusal quorumq answered with `status` and its error body: the code
    RabbitMQ gives for the same situation, INTERNAL_ERROR for what has none (a 5xx: no leader, an outcome
    unknown), with quorumq's reason as the text."""
    code = _BY_ERROR_CODE.get(str(body.get("error")), _BY_STATUS.get(status, INTERNAL_ERROR))
    reason = str(body.get("reason") or body.get("error") or f"status {status}")
    return channel_error(code, reason)
