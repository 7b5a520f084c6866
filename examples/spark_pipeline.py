"""Read `orders` from quorumq with Spark, compute each order's total, write results to parquet and to a queue.

    python examples/spark_pipeline.py --nodes http://127.0.0.1:8080,http://127.0.0.1:8081 \\
        --checkpoint /tmp/orders-ckpt --output /tmp/order-totals [--trigger available-now|SECONDS] \\
        [--user etl --password-file /run/secrets/etl-password | --token TOKEN] [--ca-file ca.pem] \\
        [--master spark://spark-master:7077]

Orders are JSON bodies like {"order": "o-1", "items": [{"price": 2.5, "qty": 2}]}. Every micro-batch is
written once to OUTPUT/batch=N (overwritten if Spark replays batch N) and published to the
`order-totals` queue under a publisher id made from the batch id, so a replay adds nothing there either.
The Spark UI is on (its address is printed first); each batch prints a progress line with its size and
the backlog still waiting in the queue. Spark runs in this process (`local[2]`) unless `--master` names a
cluster's master, e.g. a Spark standalone cluster's, whose executors then read and write the queues.
"""

from __future__ import annotations

import argparse
import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import (
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from spark_io.spark_session import local_session

ORDER_SCHEMA = "order STRING, items ARRAY<STRUCT<price: DOUBLE, qty: INT>>"


def order_totals(orders: DataFrame) -> DataFrame:
    """One row per order message: its id, total and item count, as columns and as a JSON body."""
    parsed = orders.select("id", F.from_json(F.col("body").cast("string"), ORDER_SCHEMA).alias("o"))
    totals = parsed.select(
        "id",
        F.col("o.order").alias("order"),
        F.aggregate("o.items", F.lit(0.0), lambda acc, i: acc + i.price * i.qty).alias("total"),
        F.size("o.items").alias("items"),
    )
    return totals.withColumn("body", F.to_json(F.struct("order", "total", "items")))


def connection_options(args: argparse.Namespace) -> dict[str, str]:
    """The format("quorumq") options that reach the cluster: nodes, credentials, CA file."""
    given = {
        "nodes": args.nodes,
        "user": args.user,
        "passwordFile": args.password_file,
        "token": args.token,
        "caFile": args.ca_file,
    }
    return {name: value for name, value in given.items() if value}


def write_batch(connection: dict[str, str], output: str, results_queue: str):  # type: ignore[no-untyped-def]
    """foreachBatch: overwrite this batch's parquet directory and publish its rows idempotently."""

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.persist()
        batch.drop("body").write.mode("overwrite").parquet(f"{output}/batch={batch_id}")
        (
            batch.select("body")
            .write.format("quorumq")
            .options(**connection)
            .option("queue", results_queue)
            .option("publisherId", f"order-totals-{batch_id}")
            .mode("append")
            .save()
        )
        batch.unpersist()

    return write


class ProgressPrinter(StreamingQueryListener):
    """Prints one line per micro-batch: its rows, and the backlog (the source's latest offset, as
    reportLatestOffset gives it, minus the batch's end offset)."""

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        print(f"query {event.id} started", flush=True)

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        progress = event.progress
        latest, end = (
            _seq(offset) for offset in (progress.sources[0].latestOffset, progress.sources[0].endOffset)
        )
        backlog = "?" if latest is None or end is None else latest - end  # unknown for a batch run again
        print(f"batch {progress.batchId}: {progress.numInputRows} orders, backlog {backlog}", flush=True)

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        print(f"query {event.id} ended" + (f": {event.exception}" if event.exception else ""), flush=True)


def _seq(offset: str | None) -> int | None:
    """The sequence number in a quorumq offset as progress reports it (JSON text), if it holds one."""
    try:
        parsed = json.loads(offset or "")
    except ValueError:
        return None
    return parsed.get("seq") if isinstance(parsed, dict) else None


def start(spark: SparkSession, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Start the streaming query; returns it."""
    connection = connection_options(args)
    reader = spark.readStream.format("quorumq").options(**connection).option("queue", args.queue)
    if args.max_messages:
        reader = reader.option("maxMessagesPerTrigger", str(args.max_messages))
    writer = (
        order_totals(reader.load())
        .writeStream.foreachBatch(write_batch(connection, args.output, args.results_queue))
        .option("checkpointLocation", args.checkpoint)
    )
    if args.trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{float(args.trigger)} seconds")
    return writer.start()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", required=True, help="comma-separated node HTTP(S) addresses")
    parser.add_argument("--queue", default="orders")
    parser.add_argument("--results-queue", default="order-totals")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--output", required=True, help="parquet output directory")
    parser.add_argument("--trigger", default="available-now", help="'available-now' or seconds per batch")
    parser.add_argument("--max-messages", type=int, default=None, help="maxMessagesPerTrigger")
    parser.add_argument("--user", help="user name (with --password-file)")
    parser.add_argument("--password-file", help="a file holding the password, read where clients run")
    parser.add_argument("--token", help="a bearer token instead of a user and password")
    parser.add_argument("--ca-file", help="CA bundle to verify HTTPS nodes with")
    parser.add_argument("--master", default="local[2]", help="Spark master URL (default: local[2])")
    args = parser.parse_args()
    spark = local_session("quorumq-orders-pipeline", args.master, ui=True)
    print(f"Spark UI at {spark.sparkContext.uiWebUrl}", flush=True)
    spark.streams.addListener(ProgressPrinter())
    start(spark, args).awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
