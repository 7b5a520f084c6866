"""Rows/s of the Spark source draining a backlog: a local 3-node cluster, Spark local[2], parquet sink.

    python -m bench.spark_source [--messages 200000] [--per-trigger 50000] [--body-bytes 100] \
        [--partition-size 10000] [--workers N]

publishes the backlog, then times one Trigger.AvailableNow query (checkouts, log reads from the leader,
parquet write, settles) taking at most `--per-trigger` messages a micro-batch.
It prints rows/s end to end, inside all micro-batches, and inside the micro-batches after the first: the
first pays Spark's start-up for a Python source (its planner and worker processes), once per query.

Beside it, the same query over a source that makes the same rows in memory (`bench.spark_floor`): what
Spark and the row conversion cost without the queue, so the gap between the two is the reading itself.
A small query over that source runs first, so both start with the JVM equally warm. With `--workers N`
Spark runs on a standalone cluster of N one-core workers (`bench.spark_standalone`), executors in JVMs
of their own, instead of in the driver's JVM.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.resources import cpu_seconds
from bench.spark_standalone import StandaloneCluster
from cli.node_processes import ProcessCluster
from quorumq import Client

WARM_UP_ROWS = 20_000


async def _publish_backlog(nodes: list[str], queue: str, count: int, body_bytes: int) -> None:
    async with Client(nodes, timeout=60.0) as client:
        await client.declare(queue)
        body = "x" * body_bytes
        await client.publish_all(queue, (body for _ in range(count)), window=16, batch=1000)


async def _stats(nodes: list[str], queue: str) -> dict:
    async with Client(nodes) as client:
        return await client.queue(queue)


def _drain(spark: Any, source: str, options: dict[str, str], work: Path) -> tuple[float, list[dict], int]:
    """Run one AvailableNow query from `source` into parquet under `work`; its seconds, progress (the
    micro-batches with rows) and the rows written."""
    started = time.perf_counter()
    query = (
        spark.readStream.format(source)
        .options(**options)
        .load()
        .writeStream.format("parquet")
        .option("path", str(work / "out"))
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    rows = spark.read.parquet(str(work / "out")).count()
    return elapsed, progress, rows


def _report(name: str, elapsed: float, progress: list[dict], rows: int) -> None:
    def ms(p: dict) -> int:
        return int(p["durationMs"].get("triggerExecution", 0))

    inside = sum(ms(p) for p in progress) / 1000
    batches = f"{len(progress)} micro-batches"
    print(f"{name}: {rows:,} rows in {batches}, {elapsed:.1f} s: {rows / elapsed:,.0f} rows/s end to end")
    if inside:
        print(f"  {rows / inside:,.0f} rows/s inside micro-batches ({inside:.1f} s)")
    later = progress[1:]
    later_s = sum(ms(p) for p in later) / 1000
    if later_s:
        later_rows = sum(int(p["numInputRows"]) for p in later)
        first = (
            f"first micro-batch {int(progress[0]['numInputRows']):,} rows in {ms(progress[0]) / 1000:.1f} s"
        )
        print(
            f"  {first}; the rest {later_rows / later_s:,.0f} rows/s ({later_rows:,} rows in {later_s:.1f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--per-trigger", type=int, default=50_000)
    parser.add_argument("--body-bytes", type=int, default=100)
    parser.add_argument("--partition-size", type=int, default=10_000)
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="a Spark standalone cluster of this many 1-core workers (0: local[2])",
    )
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="quorumq-spark-bench-") as work_dir:
        _run(args, Path(work_dir))


def _run(args: argparse.Namespace, work: Path) -> None:
    """Publish the backlog, then drain it with both sources on the Spark `args` asks for, in `work`."""
    from bench.spark_floor import FloorDataSource
    from spark_io.spark_session import local_session

    cluster = ProcessCluster.start(work / "cluster")
    standalone = None
    try:
        if args.workers:
            standalone = StandaloneCluster.start(work / "spark", args.workers)
        started = time.perf_counter()
        asyncio.run(_publish_backlog(cluster.urls, "backlog", args.messages, args.body_bytes))
        print(f"published {args.messages} messages in {time.perf_counter() - started:.1f} s")
        spark = local_session("quorumq-bench", "local[2]" if standalone is None else standalone.master_url)
        spark.dataSource.register(FloorDataSource)
        shared = {"partitionSize": str(args.partition_size), "maxMessagesPerTrigger": str(args.per_trigger)}
        floor_options = {"messages": str(args.messages), "bodyBytes": str(args.body_bytes), **shared}
        _drain(spark, "quorumq-floor", {**floor_options, "messages": str(WARM_UP_ROWS)}, work / "warm-up")
        options = {"nodes": ",".join(cluster.urls), "queue": "backlog", **shared}
        pids = [node.process.pid for node in cluster.nodes if node.process is not None]
        cpu_before = sum(cpu_seconds(pid) for pid in pids)
        elapsed, progress, rows = _drain(spark, "quorumq", options, work / "quorumq")
        server_cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
        _report("quorumq", elapsed, progress, rows)
        per_row = server_cpu / max(rows, 1) * 1e6
        print(f"  server CPU {per_row:.0f} µs per row (the three nodes, the whole query)")
        left = asyncio.run(_stats(cluster.urls, "backlog"))["messages"]
        print(f"  messages left in the queue: {left}")
        floor = _drain(spark, "quorumq-floor", floor_options, work / "floor")
        _report("floor (the same rows made in memory)", *floor)
        spark.stop()
    finally:
        if standalone is not None:
            standalone.stop()
        cluster.stop()


if __name__ == "__main__":
    main()
