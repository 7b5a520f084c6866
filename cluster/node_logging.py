"""A node's logs: one line per record, JSON for log shippers or text for people, each with the node's
name and, where known, the request, the queue and the Raft term it concerns.

The request id and the queue come from context variables the HTTP layer sets for each request
(`request_id`, `queue`), so every record a request causes carries them, however deep it is logged; a
record may also name its `queue`, `group` and `term` itself (`extra=`), as the Raft host's leadership
lines do.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal

LogFormat = Literal["json", "text"]
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "text")

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
"""The id of the HTTP request being served (its X-Request-Id, or one the node made)."""
queue: contextvars.ContextVar[str | None] = contextvars.ContextVar("queue", default=None)
"""The queue the HTTP request being served is about."""

_CONTEXT_FIELDS = ("request_id", "queue", "group", "term")


class _Context(logging.Filter):
    """Puts the node's name and the context variables on every record (a record's own `extra` wins)."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    def filter(self, record: logging.LogRecord) -> bool:
        record.node = self.node
        if getattr(record, "request_id", None) is None:
            record.request_id = request_id.get()
        if getattr(record, "queue", None) is None:
            record.queue = queue.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, node, message, the context fields
    that are known, and the exception's traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "node": getattr(record, "node", None),
            "message": record.getMessage(),
        }
        for name in _CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    """`time node LEVEL logger: message [queue=... request_id=...]`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(node)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        known = [f"{name}={getattr(record, name)}" for name in _CONTEXT_FIELDS if getattr(record, name, None)]
        if not known:
            return text
        first, newline, rest = text.partition("\n")
        return f"{first} [{' '.join(known)}]{newline}{rest}"


def default_format() -> LogFormat:
    """JSON when stderr is no terminal (a service, a container, a pipe), text on a terminal."""
    return "text" if sys.stderr.isatty() else "json"


def configure(node: str, level: str, log_format: LogFormat) -> None:
    """Send every record of the process to stderr, formatted as `log_format`, from `level` up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Context(node))
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
