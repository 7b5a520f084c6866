"""The streaming source: the query is a durable consumer of the queue, offsets are its delivery sequence.

`latestOffset` settles what Spark has committed (everything below `start`) and checks out more ready
messages through the leader; a partition reads its range of the sequence from the leader, unchanged
for as long as it is unsettled; `commit(end)` settles below `end`. Offsets are `{"seq": n}`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from api.client import ConflictError, Delivery, QuorumqClient, SyncClient
from api.client_async import SequencePosition
from spark_io.calls import call, refusals_explained
from spark_io.connection import Connection
from spark_io.options import SourceOptions
from spark_io.rows import Row, delivery_row

try:  # PySpark 4.2+: admission control and Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # PySpark 4.0-4.1: latestOffset() takes no arguments
    ReadAllAvailable = ReadMaxRows = None  # type: ignore[assignment,misc]
    SupportsTriggerAvailableNow = object  # type: ignore[assignment,misc]

CHECKOUT_CHUNK = 10000  # the server's limit per checkout request
LOG_CHUNK = 10000  # and per log read
MAX_CHECKOUT_ROUNDS = 100
T = TypeVar("T")


class SequenceGap(RuntimeError):
    """The queue cannot return a range Spark asked for: the consumer's state does not match the checkpoint."""


@dataclass(frozen=True)
class LogRange(InputPartition):
    """One task's share of a micro-batch: the consumer's deliveries numbered `first` to `end - 1`."""

    connection: Connection
    queue: str
    consumer: str
    first: int
    end: int


def read_range(part: LogRange) -> Iterator[Row]:
    """The rows of a LogRange, read from the queue's leader; raises SequenceGap if any is missing."""

    async def fetch(client: QuorumqClient) -> list[Delivery]:
        deliveries: list[Delivery] = []
        for chunk_start in range(part.first, part.end, LOG_CHUNK):
            chunk_end = min(chunk_start + LOG_CHUNK, part.end)
            chunk = await client.consumer_log(part.queue, part.consumer, chunk_start, chunk_end)
            if [d.seq for d in chunk] != list(range(chunk_start, chunk_end)):
                raise SequenceGap(f"{part.consumer}: log [{chunk_start}, {chunk_end}) came back incomplete")
            deliveries.extend(chunk)
        return deliveries

    for delivery in call(part.connection, fetch):
        yield delivery_row(part.queue, delivery)


class QuorumqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Spark's view of a durable consumer: options, the Trigger.AvailableNow target, and a client for the
    driver's calls, built on first use (so the reader pickles before it) and closed by `stop()`."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.available_now_end: int | None = None
        self._client: SyncClient | None = None

    def _call(self, action: Callable[[SyncClient], T]) -> T:
        with refusals_explained(self.options.connection):
            if self._client is None:
                self._client = self.options.connection.sync_client()
            return action(self._client)

    def stop(self) -> None:
        """Close the driver's client (Spark calls this when the query ends)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def initialOffset(self) -> dict:
        """Register the consumer; a fresh checkpoint starts at its oldest unsettled delivery."""
        options = self.options
        position = self._call(lambda c: c.durable_checkout(options.queue, options.consumer, 0))
        return {"seq": position.settled}

    def getDefaultReadLimit(self) -> Any:
        if ReadMaxRows is None or self.options.max_records_per_batch is None:
            return ReadAllAvailable() if ReadAllAvailable is not None else None
        return ReadMaxRows(self.options.max_records_per_batch)

    def prepareForTriggerAvailableNow(self) -> None:
        """Aim at what is checked out now plus what is ready now; later messages wait for the next run."""
        options = self.options

        def target(client: SyncClient) -> int:
            position = client.durable_checkout(options.queue, options.consumer, 0)
            return position.end + int(client.queue(options.queue)["messages_ready"])

        self.available_now_end = self._call(target)

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """Settle below `start` (committed by Spark), check out up to the read limit, return the new end."""
        begin = None if start is None else int(start["seq"])
        cap = self.options.max_records_per_batch
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            cap = limit.max_rows
        elif ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable):
            cap = None
        return {"seq": self._call(lambda client: self._advance(client, begin, cap))}

    def _advance(self, client: SyncClient, begin: int | None, cap: int | None) -> int:
        queue, consumer = self.options.queue, self.options.consumer
        if begin is None:
            position = client.durable_checkout(queue, consumer, 0)
            begin = position.end
        else:
            position = self._settle(client, begin)
        target = position.end + CHECKOUT_CHUNK * MAX_CHECKOUT_ROUNDS if cap is None else begin + cap
        if self.available_now_end is not None:
            target = min(target, self.available_now_end)
        while position.end < target:
            wanted = min(target - position.end, CHECKOUT_CHUNK)
            before = position.end
            position = client.durable_checkout(queue, consumer, wanted)
            if position.end - before < wanted:
                break
        return min(position.end, target)

    def _settle(self, client: SyncClient, below: int) -> SequencePosition:
        try:
            return client.durable_settle(self.options.queue, self.options.consumer, below)
        except ConflictError as exc:
            raise SequenceGap(
                f"consumer {self.options.consumer} is behind the checkpoint's {below} ({exc}): "
                "was it cancelled, or the queue re-created?"
            ) from exc

    def partitions(self, start: dict, end: dict) -> Sequence[LogRange]:
        first, last = int(start["seq"]), int(end["seq"])
        size = self.options.partition_size
        options = self.options
        return [
            LogRange(options.connection, options.queue, options.consumer, at, min(at + size, last))
            for at in range(first, last, size)
        ]

    def read(self, partition: LogRange) -> Iterator[Row]:  # type: ignore[override]
        return read_range(partition)

    def commit(self, end: dict) -> None:
        """Spark finished every batch up to `end`: settle those deliveries (idempotent, monotonic)."""
        below = int(end["seq"])
        self._call(lambda client: self._settle(client, below))
