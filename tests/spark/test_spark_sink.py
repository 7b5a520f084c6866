"""The quorumq sink: pipelined confirmed publishes, per-row routing, and a replay adds nothing twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import Row
from spark_helpers import queue_stats, run

from cli.node_processes import ProcessCluster
from quorumq import Client
from spark_io.options import SinkOptions
from spark_io.sink import numbered_batches, publish_pipelined

EVENTS = 1100  # > the 1024 seqs a publisher's dedup window keeps ids for


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
        .option("publishBatch", "1")  # more publishes than a publisher's dedup window holds
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
        .awaitTermination()
    )


def test_a_replayed_batch_is_published_only_once(spark, cluster: ProcessCluster, tmp_path: Path) -> None:
    run(cluster.urls, lambda client: client.declare("sink-replay"))
    source, checkpoint = tmp_path / "events", tmp_path / "checkpoint"
    _write_json_lines(source, EVENTS)
    nodes = ",".join(cluster.urls)
    _stream_into_queue(spark, source, nodes, "sink-replay", checkpoint)
    assert queue_stats(cluster.urls, "sink-replay")["messages"] == EVENTS
    for name in ("0", ".0.crc"):  # as if the driver died after the sink wrote batch 0
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    _stream_into_queue(spark, source, nodes, "sink-replay", checkpoint)
    assert (checkpoint / "commits" / "0").exists(), "Spark should have run batch 0 again"
    assert queue_stats(cluster.urls, "sink-replay")["messages"] == EVENTS
    got = run(cluster.urls, lambda client: client.browse("sink-replay", limit=EVENTS))
    assert sorted(d.text for d in got) == sorted(f"event-{i}" for i in range(EVENTS))
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


class _CountingClient(Client):
    """A real client that records how many publish requests it had in flight at once."""

    in_flight = most_in_flight = 0

    async def publish(self, *args: Any, **kwargs: Any) -> list[int]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await super().publish(*args, **kwargs)
        finally:
            self.in_flight -= 1


async def test_a_task_keeps_several_publishes_in_flight_and_a_replay_adds_nothing(
    cluster: ProcessCluster,
) -> None:
    options = SinkOptions.parse({"nodes": ",".join(cluster.urls), "queue": "pipelined", "publishBatch": "10"})
    rows = [Row(body=f"m{i}") for i in range(300)]
    async with _CountingClient(cluster.urls) as client:
        await client.declare("pipelined")
        assert await publish_pipelined(client, "task-1", numbered_batches(options, rows), window=4) == 300
        assert client.most_in_flight == 4
        assert await publish_pipelined(client, "task-1", numbered_batches(options, rows), window=4) == 300
        assert sorted(d.text for d in await client.browse("pipelined")) == sorted(f"m{i}" for i in range(300))


def test_rows_go_to_their_queue_column_or_the_option_and_a_column_read_from_quorumq_does_not_route(
    spark, cluster: ProcessCluster
) -> None:
    nodes = ",".join(cluster.urls)
    for queue in ("route-a", "route-b", "route-default", "route-copy"):
        run(cluster.urls, lambda client, q=queue: client.declare(q))
    targets = ["route-a", "route-b", None]
    frame = spark.createDataFrame([(f"r{i}", targets[i % 3]) for i in range(60)], "body STRING, queue STRING")

    def write(data, queue: str) -> None:  # type: ignore[no-untyped-def]
        writer = data.write.format("quorumq").option("nodes", nodes).option("queue", queue)
        writer.option("publishBatch", "5").option("publishWindow", "4").mode("append").save()

    write(frame.repartition(2), "route-default")
    counts = {q: queue_stats(cluster.urls, q)["messages"] for q in ("route-a", "route-b", "route-default")}
    assert counts == {"route-a": 20, "route-b": 20, "route-default": 20}
    read_a = spark.read.format("quorumq").option("nodes", nodes).option("queue", "route-a").load()
    write(read_a.select("body", "headers", "queue"), "route-copy")
    assert queue_stats(cluster.urls, "route-copy")["messages"] == 20
    assert queue_stats(cluster.urls, "route-a")["messages"] == 20
