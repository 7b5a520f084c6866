"""The quorumq sink: confirmed publishes, and a replayed batch adds nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

from spark_helpers import queue_stats, run

from cli.node_processes import ProcessCluster


def _write_json_lines(directory: Path, count: int) -> None:
    directory.mkdir(parents=True)
    lines = [json.dumps({"body": f"event-{i}", "headers": json.dumps({"n": i})}) for i in range(count)]
    (directory / "events.json").write_text("\n".join(lines) + "\n")


def _stream_into_queue(spark, source: Path, nodes: str, queue: str, checkpoint: Path) -> None:  # type: ignore[no-untyped-def]
    (
        spark.readStream.schema("body STRING, headers STRING")
        .json(str(source))
        .writeStream.format("quorumq")
        .option("nodes", nodes)
        .option("queue", queue)
        .option("publishBatch", "100")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
        .awaitTermination()
    )


def test_a_replayed_batch_is_published_only_once(spark, cluster: ProcessCluster, tmp_path: Path) -> None:
    run(cluster.urls, lambda client: client.declare("sink-replay"))
    source, checkpoint = tmp_path / "events", tmp_path / "checkpoint"
    _write_json_lines(source, 700)
    nodes = ",".join(cluster.urls)
    _stream_into_queue(spark, source, nodes, "sink-replay", checkpoint)
    assert queue_stats(cluster.urls, "sink-replay")["messages"] == 700
    for name in ("0", ".0.crc"):  # as if the driver died after the sink wrote batch 0
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    _stream_into_queue(spark, source, nodes, "sink-replay", checkpoint)
    assert (checkpoint / "commits" / "0").exists(), "Spark should have run batch 0 again"
    assert queue_stats(cluster.urls, "sink-replay")["messages"] == 700
    got = run(cluster.urls, lambda client: client.get("sink-replay", count=1000, ack="auto"))
    assert sorted(d.text for d in got) == sorted(f"event-{i}" for i in range(700))
    assert {d.text: d.headers["n"] for d in got}["event-42"] == 42


def test_a_batch_write_with_a_publisher_id_can_be_repeated_without_duplicates(
    spark, cluster: ProcessCluster
) -> None:
    run(cluster.urls, lambda client: client.declare("sink-batch"))
    frame = spark.createDataFrame([(f"row-{i}".encode(),) for i in range(300)], "body BINARY").repartition(2)
    for _ in range(2):
        (
            frame.write.format("quorumq")
            .option("nodes", ",".join(cluster.urls))
            .option("queue", "sink-batch")
            .option("publisherId", "nightly-load-1")
            .mode("append")
            .save()
        )
    assert queue_stats(cluster.urls, "sink-batch")["messages"] == 300
