"""The streaming source: the query is a durable consumer of the queue, offsets are its delivery sequence.

`latestOffset` settles what Spark has committed (everything below `start`) and checks out more ready
messages through the leader; a partition reads its range of the sequence from the leader, unchanged
for as long as it is unsettled; `commit(end)` settles below `end`. Offsets are `{"seq": n}`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from quorumq import Client, ConflictError, Delivery, SequencePosition, SyncClient
from spark_io.calls import call, refusals_explained
from spark_io.connection import Connection
from spark_io.options import SourceOptions
from spark_io.rows import delivery_batch

try:  # PySpark 4.2+: admission control, Trigger.AvailableNow, reportLatestOffset
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxBytes,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # PySpark 4.0-4.1: latestOffset() takes no arguments
    ReadAllAvailable = ReadMaxBytes = ReadMaxRows = None  # type: ignore[assignment,misc]
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
    headers: str


def read_range(part: LogRange) -> Iterator[pa.RecordBatch]:
    """The rows of a LogRange, read from the queue's leader a page at a time, one record batch per page;
    raises SequenceGap if any delivery is missing."""

    async def fetch(client: Client) -> list[list[Delivery]]:
        pages: list[list[Delivery]] = []
        for chunk_start in range(part.first, part.end, LOG_CHUNK):
            chunk_end = min(chunk_start + LOG_CHUNK, part.end)
            chunk = await client.consumer_log(part.queue, part.consumer, chunk_start, chunk_end)
            if [d.seq for d in chunk] != list(range(chunk_start, chunk_end)):
                raise SequenceGap(f"{part.consumer}: log [{chunk_start}, {chunk_end}) came back incomplete")
            pages.append(chunk)
        return pages

    for page in call(part.connection, fetch):
        yield delivery_batch(part.queue, page, part.headers)


class QuorumqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's view of a durable consumer: options, the Trigger.AvailableNow target, and a client for the
    driver's calls, built on first use (so the reader pickles before it) and closed by `stop()`."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.available_now_end: int | None = None
        self.checked_out_end: int | None = None
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
        """maxMessagesPerTrigger as ReadMaxRows, else maxBytesPerTrigger as ReadMaxBytes (the other option
        still applies in latestOffset), else ReadAllAvailable."""
        options = self.options
        if options.max_messages is not None:
            return ReadMaxRows(options.max_messages)
        if options.max_bytes is not None:
            return ReadMaxBytes(options.max_bytes)
        return ReadAllAvailable()

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
        count, size = self._limits(limit)
        self.checked_out_end = self._call(lambda client: self._advance(client, begin, count, size))
        return {"seq": self.checked_out_end}

    def reportLatestOffset(self) -> dict | None:
        """Where the sequence would end if every message ready now were checked out (progress shows it
        as `latestOffset`, so its distance from `endOffset` is the backlog)."""
        if self.checked_out_end is None:
            return None
        ready = int(self._call(lambda client: client.queue(self.options.queue))["messages_ready"])
        return {"seq": self.checked_out_end + ready}

    def _limits(self, limit: Any) -> tuple[int | None, int | None]:
        """The messages and bytes a batch may take: none when Spark asks for all that is available, else
        Spark's limit of its kind and the options for the other (only the options on PySpark 4.0-4.1)."""
        options = self.options
        if ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable):
            return None, None
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            return limit.max_rows, options.max_bytes
        if ReadMaxBytes is not None and isinstance(limit, ReadMaxBytes):
            return options.max_messages, limit.max_bytes
        return options.max_messages, options.max_bytes

    def _advance(self, client: SyncClient, begin: int | None, count: int | None, size: int | None) -> int:
        """Check out up to `count` messages past `begin` with bodies of at most `size` bytes in all.

        Each checkout request takes its first message whatever its size, so a batch is never empty for
        want of bytes; a batch of more than one request (over 10,000 messages) may go over `size` by one
        message per further request. Deliveries already checked out past `begin` (by a driver that died
        before recording them) count towards `count` only."""
        queue, consumer = self.options.queue, self.options.consumer
        if begin is None:
            position = client.durable_checkout(queue, consumer, 0)
            begin = position.end
        else:
            position = self._settle(client, begin)
        target = position.end + CHECKOUT_CHUNK * MAX_CHECKOUT_ROUNDS if count is None else begin + count
        if self.available_now_end is not None:
            target = min(target, self.available_now_end)
        while position.end < target and (size is None or size > 0):
            wanted = min(target - position.end, CHECKOUT_CHUNK)
            before = position.end
            position = client.durable_checkout(
                queue, consumer, wanted, since=self.options.since_ms, max_bytes=size
            )
            if size is not None:
                size -= position.taken_bytes
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
            LogRange(
                options.connection, options.queue, options.consumer, at, min(at + size, last), options.headers
            )
            for at in range(first, last, size)
        ]

    def read(self, partition: LogRange) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        return read_range(partition)

    def commit(self, end: dict) -> None:
        """Spark finished every batch up to `end`: settle those deliveries (idempotent, monotonic)."""
        below = int(end["seq"])
        self._call(lambda client: self._settle(client, below))
