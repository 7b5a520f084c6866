"""The options of format("quorumq"), parsed once on the driver and shipped to executors as plain data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_PARTITION_SIZE = 5000
DEFAULT_PUBLISH_BATCH = 500


class OptionError(ValueError):
    """A missing or malformed option of the quorumq data source."""


def _required(options: Mapping[str, str], name: str) -> str:
    value = options.get(name)
    if not value:
        raise OptionError(f"option '{name}' is required for format('quorumq')")
    return value


def _positive(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = options.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise OptionError(f"option '{name}' must be an integer, got {raw!r}") from exc
    if value < 1:
        raise OptionError(f"option '{name}' must be >= 1, got {value}")
    return value


def _nodes(options: Mapping[str, str]) -> tuple[str, ...]:
    nodes = tuple(node.strip() for node in _required(options, "nodes").split(",") if node.strip())
    if not nodes:
        raise OptionError("option 'nodes' lists no address")
    return nodes


@dataclass(frozen=True)
class SourceOptions:
    """`nodes` (comma-separated HTTP addresses), `queue`, `consumer` (durable consumer name, default
    `spark-<queue>`), `maxRecordsPerBatch` (none: everything ready), `partitionSize` (rows per task)."""

    nodes: tuple[str, ...]
    queue: str
    consumer: str
    max_records_per_batch: int | None
    partition_size: int

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        queue = _required(options, "queue")
        partition_size = _positive(options, "partitionSize", DEFAULT_PARTITION_SIZE)
        assert partition_size is not None
        return cls(
            nodes=_nodes(options),
            queue=queue,
            consumer=options.get("consumer") or f"spark-{queue}",
            max_records_per_batch=_positive(options, "maxRecordsPerBatch", None),
            partition_size=partition_size,
        )


@dataclass(frozen=True)
class SinkOptions:
    """`nodes`, `queue`, `publishBatch` (messages per confirmed publish request) and, for batch writes,
    `publisherId` (a stable id that makes a repeated write of the same rows add nothing)."""

    nodes: tuple[str, ...]
    queue: str
    publish_batch: int
    publisher_id: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        publish_batch = _positive(options, "publishBatch", DEFAULT_PUBLISH_BATCH)
        assert publish_batch is not None
        return cls(
            nodes=_nodes(options),
            queue=_required(options, "queue"),
            publish_batch=publish_batch,
            publisher_id=options.get("publisherId") or None,
        )
