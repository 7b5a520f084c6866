"""The sink: rows published with confirms, idempotently per (query, batch, partition).

Each task publishes its rows in order under one publisher id derived from the query id, the micro-batch
id and the partition: per target queue, in batches numbered 1, 2, ..., with up to `publishWindow`
requests in flight and their confirms awaited in order. A replayed batch sends the same (publisher,
seq) pairs, which each queue answers from its dedup window without enqueuing again.

Rows need a `body` column (binary or string) and may have `headers` (a map or a JSON object string)
and `queue`: a row's non-null `queue` value is where it goes, the option `queue` is for the rest. A
`queue` column that comes unchanged from format("quorumq") names where the row was read from and does
not route (spark_io.rows.READ_FROM).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from quorumq import Client, Message, QuorumqError
from spark_io.calls import call
from spark_io.options import SinkOptions
from spark_io.rows import READ_FROM

BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
IDS_FORGOTTEN = "ids_forgotten"

Batch = tuple[str, int, list[Message]]
"""A publish request: target queue, seq, messages."""


def routes_by_column(schema: StructType) -> bool:
    """Whether rows of `schema` pick their queue: a `queue` column not passed on from a quorumq read."""
    return "queue" in schema.names and not schema["queue"].metadata.get(READ_FROM)


@dataclass
class Published(WriterCommitMessage):
    """What one task published: its publisher id and message count."""

    publisher: str
    count: int


def row_message(row: Any) -> Message:
    """A Spark row as a message: `body` bytes or text, optional `headers` map or JSON string."""
    fields = row.asDict() if hasattr(row, "asDict") else dict(row)
    if "body" not in fields:
        raise ValueError("format('quorumq') needs a 'body' column to write")
    body = fields["body"]
    body = bytes(body) if isinstance(body, bytearray | memoryview) else body
    if not isinstance(body, bytes | str):
        body = str(body)
    headers = fields.get("headers")
    if isinstance(headers, str):
        headers = json.loads(headers)
    return Message(body, dict(headers) if headers else None)


def _target(options: SinkOptions, row: Any) -> str:
    queue = row["queue"] if options.route else None
    queue = queue or options.queue
    if queue is None:
        raise ValueError("a row has no 'queue' value and the option 'queue' is not set")
    return queue


def numbered_batches(options: SinkOptions, rows: Iterable[Any]) -> Iterator[Batch]:
    """The rows as publish requests: per target queue, in row order, `publishBatch` messages a request,
    numbered 1, 2, ... per queue; a request as soon as it is full, the rest once the rows end."""
    pending: dict[str, list[Message]] = {}
    seqs: dict[str, int] = {}

    def take(queue: str) -> Batch:
        seqs[queue] = seqs.get(queue, 0) + 1
        return queue, seqs[queue], pending.pop(queue)

    for row in rows:
        queue = _target(options, row)
        batch = pending.setdefault(queue, [])
        batch.append(row_message(row))
        if len(batch) == options.publish_batch:
            yield take(queue)
    for queue in list(pending):
        yield take(queue)


async def _publish(client: Client, publisher: str, batch: Batch) -> int:
    """Publish one request; a duplicate so old that the queue forgot its ids was enqueued: it counts."""
    queue, seq, messages = batch
    try:
        await client.publish(queue, messages, publisher=publisher, seq=seq)
    except QuorumqError as exc:
        if exc.code != IDS_FORGOTTEN:
            raise
    return len(messages)


async def publish_pipelined(client: Client, publisher: str, batches: Iterable[Batch], window: int) -> int:
    """Send `batches` with up to `window` requests in flight, awaiting their confirms in order; returns
    how many messages were confirmed. The first failure cancels the requests still in flight."""
    in_flight: deque[asyncio.Task[int]] = deque()
    count = 0
    try:
        for batch in batches:
            if len(in_flight) >= window:
                count += await in_flight.popleft()
            in_flight.append(asyncio.create_task(_publish(client, publisher, batch)))
        while in_flight:
            count += await in_flight.popleft()
    finally:
        for task in in_flight:
            task.cancel()
        await asyncio.gather(*in_flight, return_exceptions=True)
    return count


def publish_rows(options: SinkOptions, publisher: str, rows: Iterable[Any]) -> Published:
    """Publish `rows` under `publisher` and return once every message is confirmed."""
    batches = numbered_batches(options, rows)
    count = call(
        options.connection,
        lambda client: publish_pipelined(client, publisher, batches, options.publish_window),
    )
    return Published(publisher, count)


class QuorumqStreamWriter(DataSourceStreamWriter):
    """writeStream.format("quorumq"): one publisher per (query id, batch id, partition)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> Published:
        context = TaskContext.get()
        assert context is not None, "write() runs inside a Spark task"
        query = context.getLocalProperty(QUERY_ID_PROPERTY)
        batch = context.getLocalProperty(BATCH_ID_PROPERTY)
        if query is None or batch is None:
            raise RuntimeError("the streaming query or batch id is missing from the task's properties")
        return publish_rows(self.options, f"spark-{query}-{batch}-{context.partitionId()}", iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every task's publishes were confirmed before it returned: nothing is left to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Published messages stay; the replay of this batch is deduplicated by the queue."""


class QuorumqBatchWriter(DataSourceWriter):
    """write.format("quorumq"): one publisher per (write job, partition), so task retries add nothing.

    The job is the `publisherId` option when given (e.g. from foreachBatch's batch id, so that a
    replayed batch is deduplicated too), else a fresh id per write."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.job = options.publisher_id or uuid.uuid4().hex

    def write(self, iterator: Iterator[Any]) -> Published:
        context = TaskContext.get()
        assert context is not None, "write() runs inside a Spark task"
        return publish_rows(self.options, f"spark-{self.job}-{context.partitionId()}", iterator)
