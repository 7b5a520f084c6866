"""The sink: rows published with confirms, idempotently per (query, batch, partition).

Each task publishes its rows in order as numbered batches under one publisher id derived from the
query id, the micro-batch id and the partition; a replayed batch sends the same (publisher, seq) pairs,
which the queue answers from its dedup window without enqueuing again. Rows need a `body` column
(binary or string) and may have `headers` (a map or a JSON object string).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from api.client import QuorumqClient
from api.client_messages import Message
from spark_io.calls import call
from spark_io.options import SinkOptions

BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"


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


def _batches(rows: Iterable[Any], size: int) -> Iterator[list[Message]]:
    batch: list[Message] = []
    for row in rows:
        batch.append(row_message(row))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def publish_rows(options: SinkOptions, publisher: str, rows: Iterable[Any]) -> Published:
    """Publish `rows` in order as batches numbered 1, 2, ... under `publisher`; wait for every confirm."""

    async def run(client: QuorumqClient) -> int:
        count = 0
        for seq, batch in enumerate(_batches(rows, options.publish_batch), start=1):
            await client.publish(options.queue, batch, publisher=publisher, seq=seq)
            count += len(batch)
        return count

    return Published(publisher, call(options.connection, run))


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
