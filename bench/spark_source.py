"""Rows/s of the Spark source draining a backlog: a local 3-node cluster, Spark local[2], parquet sink.

`python -m bench.spark_source [--messages 100000] [--body-bytes 100] [--partition-size 10000]` publishes
the backlog, then times one Trigger.AvailableNow query (checkouts, log reads from the leader, parquet
write, settles) from start to end, and prints rows/s with and without the query's fixed start-up cost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from cli.node_processes import ProcessCluster
from quorumq import Client


async def _publish_backlog(nodes: list[str], queue: str, count: int, body_bytes: int) -> None:
    async with Client(nodes, timeout=60.0) as client:
        await client.declare(queue)
        body = "x" * body_bytes
        await client.publish_all(queue, (body for _ in range(count)), window=16, batch=1000)


async def _stats(nodes: list[str], queue: str) -> dict:
    async with Client(nodes) as client:
        return await client.queue(queue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--body-bytes", type=int, default=100)
    parser.add_argument("--partition-size", type=int, default=10_000)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from spark_io.spark_session import local_session

    work = Path(tempfile.mkdtemp(prefix="quorumq-spark-bench-"))
    cluster = ProcessCluster.start(work / "cluster")
    try:
        started = time.perf_counter()
        asyncio.run(_publish_backlog(cluster.urls, "backlog", args.messages, args.body_bytes))
        print(f"published {args.messages} messages in {time.perf_counter() - started:.1f} s")
        spark = local_session("quorumq-bench")
        started = time.perf_counter()
        query = (
            spark.readStream.format("quorumq")
            .option("nodes", ",".join(cluster.urls))
            .option("queue", "backlog")
            .option("partitionSize", str(args.partition_size))
            .load()
            .writeStream.format("parquet")
            .option("path", str(work / "out"))
            .option("checkpointLocation", str(work / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        elapsed = time.perf_counter() - started
        batch_ms = sum(p["durationMs"].get("triggerExecution", 0) for p in query.recentProgress)
        rows = spark.read.parquet(str(work / "out")).count()
        left = asyncio.run(_stats(cluster.urls, "backlog"))["messages"]
        print(f"spark read {rows} rows in {elapsed:.1f} s: {rows / elapsed:,.0f} rows/s end to end")
        if batch_ms:
            print(f"  {rows / (batch_ms / 1000):,.0f} rows/s inside micro-batches ({batch_ms / 1000:.1f} s)")
        print(f"  messages left in the queue: {left}")
        spark.stop()
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
