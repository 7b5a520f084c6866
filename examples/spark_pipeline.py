"""Read `orders` from quorumq with Spark, compute each order's total, write results to parquet and to a queue.

    python examples/spark_pipeline.py --nodes http://127.0.0.1:8080,http://127.0.0.1:8081 \\
        --checkpoint /tmp/orders-ckpt --output /tmp/order-totals [--trigger available-now|SECONDS]

Orders are JSON bodies like {"order": "o-1", "items": [{"price": 2.5, "qty": 2}]}. Every micro-batch is
written once to OUTPUT/batch=N (overwritten if Spark replays batch N) and published to the
`order-totals` queue under a publisher id made from the batch id, so a replay adds nothing there either.
"""

from __future__ import annotations

import argparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

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


def write_batch(nodes: str, output: str, results_queue: str):  # type: ignore[no-untyped-def]
    """foreachBatch: overwrite this batch's parquet directory and publish its rows idempotently."""

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.persist()
        batch.drop("body").write.mode("overwrite").parquet(f"{output}/batch={batch_id}")
        (
            batch.select("body")
            .write.format("quorumq")
            .option("nodes", nodes)
            .option("queue", results_queue)
            .option("publisherId", f"order-totals-{batch_id}")
            .mode("append")
            .save()
        )
        batch.unpersist()

    return write


def start(spark: SparkSession, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Start the streaming query; returns it."""
    reader = spark.readStream.format("quorumq").option("nodes", args.nodes).option("queue", args.queue)
    if args.max_records:
        reader = reader.option("maxRecordsPerBatch", str(args.max_records))
    writer = (
        order_totals(reader.load())
        .writeStream.foreachBatch(write_batch(args.nodes, args.output, args.results_queue))
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
    parser.add_argument("--nodes", required=True, help="comma-separated node HTTP addresses")
    parser.add_argument("--queue", default="orders")
    parser.add_argument("--results-queue", default="order-totals")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--output", required=True, help="parquet output directory")
    parser.add_argument("--trigger", default="available-now", help="'available-now' or seconds per batch")
    parser.add_argument("--max-records", type=int, default=None, help="maxRecordsPerBatch")
    args = parser.parse_args()
    spark = local_session("quorumq-orders-pipeline")
    start(spark, args).awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
