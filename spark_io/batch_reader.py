"""spark.read.format("quorumq"): the messages a queue holds, read without consuming them.

The driver fixes the ids to read when it plans the query: from the lowest id the queue holds to below
its `next_id`, split into ranges of `partitionSize` ids. Each task pages through its range with
`GET /api/queues/{q}/messages` (a browse from the leader): a message in the range that is still in the
queue, ready or checked out, when the task runs is read once; one consumed meanwhile is not; messages
published after planning are not read. Nothing is delivered, counted or settled.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from quorumq import Client, Delivery
from spark_io.calls import call
from spark_io.connection import Connection
from spark_io.options import SourceOptions
from spark_io.rows import delivery_batch

BROWSE_PAGE = 10000  # the server's limit per browse request


@dataclass(frozen=True)
class IdRange(InputPartition):
    """One task's share of a batch read: the messages with ids from `first` to below `end`."""

    connection: Connection
    queue: str
    first: int
    end: int
    since_ms: int | None
    headers: str


def read_ids(part: IdRange) -> Iterator[pa.RecordBatch]:
    """The messages in `part` that the queue holds (and enqueued at or after `since_ms`), one record batch
    per page browsed."""

    async def fetch(client: Client) -> list[list[Delivery]]:
        pages: list[list[Delivery]] = []
        start = part.first
        while start < part.end:  # a page may end early: at BROWSE_PAGE messages or the answer's byte budget
            page = await client.browse(part.queue, start, to=part.end, limit=BROWSE_PAGE)
            if not page:
                break
            pages.append(page)
            start = page[-1].id + 1
        return pages

    since = part.since_ms
    for page in call(part.connection, fetch):
        if since is not None:
            page = [d for d in page if d.published_at is not None and d.published_at >= since]
        if page:
            yield delivery_batch(part.queue, page, part.headers)


class QuorumqBatchReader(DataSourceReader):
    """Plans id ranges on the driver; each task browses its range."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[IdRange]:
        options = self.options

        async def bounds(client: Client) -> tuple[int, int]:
            end = int((await client.queue(options.queue))["next_id"])
            lowest = await client.browse(options.queue, 0, to=end, limit=1)
            return (lowest[0].id if lowest else end), end

        first, end = call(options.connection, bounds)
        size = options.partition_size
        starts = range(first, end, size) if first < end else [end]  # an empty queue: one empty range
        return [
            IdRange(
                options.connection, options.queue, at, min(at + size, end), options.since_ms, options.headers
            )
            for at in starts
        ]

    def read(self, partition: IdRange) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        return read_ids(partition)
