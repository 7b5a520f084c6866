"""The options of format("quorumq"), parsed once on the driver and shipped to executors as plain data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from spark_io.connection import Connection
from spark_io.option_values import OptionError, moment, positive, required
from spark_io.rows import headers_format

DEFAULT_PARTITION_SIZE = 5000
DEFAULT_PUBLISH_BATCH = 500
DEFAULT_PUBLISH_WINDOW = 8
MAX_PUBLISH_WINDOW = 256  # well inside the 1024 seqs a queue's dedup window keeps per publisher


@dataclass(frozen=True)
class SourceOptions:
    """What readStream and read take: the connection, `queue`, `since` (only messages enqueued at or after
    it), `headersFormat` (`map` or `json`), `partitionSize` (rows per task); readStream also
    `consumer` (durable consumer name, default `spark-<queue>`), `maxMessagesPerTrigger` (alias
    `maxRecordsPerBatch`) and `maxBytesPerTrigger` (none: everything ready)."""

    connection: Connection
    queue: str
    consumer: str
    max_messages: int | None
    max_bytes: int | None
    partition_size: int
    since_ms: int | None
    headers: str

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        queue = required(options, "queue")
        partition_size = positive(options, "partitionSize", DEFAULT_PARTITION_SIZE)
        assert partition_size is not None
        return cls(
            connection=Connection.parse(options),
            queue=queue,
            consumer=options.get("consumer") or f"spark-{queue}",
            max_messages=_max_messages(options),
            max_bytes=positive(options, "maxBytesPerTrigger", None),
            partition_size=partition_size,
            since_ms=moment(options, "since"),
            headers=headers_format(options),
        )


def _max_messages(options: Mapping[str, str]) -> int | None:
    """`maxMessagesPerTrigger`, or its older name `maxRecordsPerBatch` (which Spark also uses for Arrow)."""
    values = {positive(options, name, None) for name in ("maxMessagesPerTrigger", "maxRecordsPerBatch")}
    values.discard(None)
    if len(values) > 1:
        raise OptionError("options 'maxMessagesPerTrigger' and its alias 'maxRecordsPerBatch' differ")
    return values.pop() if values else None


@dataclass(frozen=True)
class SinkOptions:
    """What writeStream and write take: the connection, `queue` (where rows without a `queue` value go),
    `publishBatch` (messages per confirmed publish request), `publishWindow` (requests in flight per
    task) and, for batch writes, `publisherId` (a stable id that makes a repeated write add nothing).
    `route` is whether the rows' own `queue` column picks their queue (see spark_io.sink)."""

    connection: Connection
    queue: str | None
    publish_batch: int
    publish_window: int
    route: bool
    publisher_id: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], route: bool = False) -> SinkOptions:
        queue = options.get("queue") or None
        if queue is None and not route:
            raise OptionError("option 'queue' is required unless the rows have a 'queue' column to route by")
        publish_batch = positive(options, "publishBatch", DEFAULT_PUBLISH_BATCH)
        publish_window = positive(options, "publishWindow", DEFAULT_PUBLISH_WINDOW)
        assert publish_batch is not None and publish_window is not None
        if publish_window > MAX_PUBLISH_WINDOW:
            raise OptionError(f"option 'publishWindow' must be <= {MAX_PUBLISH_WINDOW}, got {publish_window}")
        return cls(
            connection=Connection.parse(options),
            queue=queue,
            publish_batch=publish_batch,
            publish_window=publish_window,
            route=route,
            publisher_id=options.get("publisherId") or None,
        )
