"""format("quorumq-floor"): a streaming source that makes the rows format("quorumq") would read, in memory.

For `bench.spark_source`: the same schema, partitions and row conversion (`delivery_batch`) as the real
source, without the queue, so a query over it costs what Spark and the conversion cost. Options:
`messages`, `bodyBytes`, `partitionSize`, `maxMessagesPerTrigger`. Offsets are `{"seq": n}`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from quorumq import Delivery
from spark_io.rows import delivery_batch, source_schema
from spark_io.source import LOG_CHUNK

PUBLISHED_AT_MS = 1_700_000_000_000


@dataclass(frozen=True)
class Span(InputPartition):
    first: int
    end: int
    body_bytes: int


class FloorStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """`messages` rows in micro-batches of at most `per_trigger`, as the real source takes a backlog."""

    def __init__(self, messages: int, body_bytes: int, partition_size: int, per_trigger: int) -> None:
        self.messages, self.body_bytes = messages, body_bytes
        self.partition_size, self.per_trigger = partition_size, per_trigger

    def initialOffset(self) -> dict:
        return {"seq": 0}

    def getDefaultReadLimit(self) -> ReadMaxRows:
        return ReadMaxRows(self.per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def latestOffset(self, start: dict, limit: ReadMaxRows) -> dict:  # type: ignore[override]
        return {"seq": min(int(start["seq"]) + limit.max_rows, self.messages)}

    def partitions(self, start: dict, end: dict) -> Sequence[Span]:
        first, last = int(start["seq"]), int(end["seq"])
        return [
            Span(at, min(at + self.partition_size, last), self.body_bytes)
            for at in range(first, last, self.partition_size)
        ]

    def read(self, partition: Span) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        body = b"x" * partition.body_bytes
        for at in range(partition.first, partition.end, LOG_CHUNK):  # a batch per page, as the source reads
            page = [
                Delivery(seq, body, {}, 0, False, seq, PUBLISHED_AT_MS)
                for seq in range(at, min(at + LOG_CHUNK, partition.end))
            ]
            yield delivery_batch("floor", page, "map")

    def commit(self, end: dict) -> None:
        pass


class FloorDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "quorumq-floor"

    def schema(self) -> StructType:
        return source_schema("map")

    def streamReader(self, schema: StructType) -> FloorStreamReader:
        options = self.options
        return FloorStreamReader(
            int(options["messages"]),
            int(options["bodyBytes"]),
            int(options["partitionSize"]),
            int(options["maxMessagesPerTrigger"]),
        )
