"""The quorumq source, streaming and batch, under real Spark (local[2]) and a real 3-node cluster."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes
from spark_helpers import publish_orders, queue_stats, run, stream_to_parquet
from support.eventually import eventually_sync

from cli.node_processes import ProcessCluster
from quorumq import Client, Message, SyncClient
from spark_io.options import SourceOptions
from spark_io.source import QuorumqStreamReader


def _publish_sized(nodes: list[str], queue: str, sizes: list[int]) -> None:
    """Declare `queue` and publish one message of each size (in bytes), in order."""

    async def go(client: Client) -> None:
        await client.declare(queue)
        await client.publish(queue, [bytes([65 + i % 26]) * size for i, size in enumerate(sizes)])

    run(nodes, go)


def _stream_to_parquet(spark, nodes: str, queue: str, tmp_path: Path, **options: str):  # type: ignore[no-untyped-def]
    return stream_to_parquet(spark, {"nodes": nodes, "queue": queue, **options}, tmp_path)


def test_a_backlog_is_consumed_exactly_once_into_parquet_and_the_queue_ends_empty(
    spark, cluster: ProcessCluster, tmp_path: Path
) -> None:
    ids = publish_orders(cluster.urls, "exactly-once", 1200)
    query = _stream_to_parquet(
        spark, ",".join(cluster.urls), "exactly-once", tmp_path, maxRecordsPerBatch="500", partitionSize="200"
    )
    query.trigger(availableNow=True).start().awaitTermination()
    rows = spark.read.parquet(str(tmp_path / "out")).select("id", "queue", "delivery_count").collect()
    assert sorted(r.id for r in rows) == sorted(ids)
    assert {(r.queue, r.delivery_count) for r in rows} == {("exactly-once", 0)}
    assert queue_stats(cluster.urls, "exactly-once")["messages"] == 0


def test_a_competing_http_consumer_shares_the_queue_without_loss_or_overlap(
    spark, cluster: ProcessCluster, tmp_path: Path
) -> None:
    ids = publish_orders(cluster.urls, "shared", 1500)
    taken_over_http: list[int] = []
    stop = threading.Event()

    def http_consumer() -> None:
        with SyncClient(cluster.urls) as client:
            tag = client.consume("shared", prefetch=20)
            while not stop.is_set():
                batch = client.deliveries("shared", tag, max=20, wait=0.2)
                if batch:
                    stop.wait(0.02)  # simulated work per batch, so Spark gets its share
                    client.ack("shared", tag, [d.id for d in batch])
                    taken_over_http.extend(d.id for d in batch)
            client.cancel("shared", tag)

    query = (
        _stream_to_parquet(spark, ",".join(cluster.urls), "shared", tmp_path, maxRecordsPerBatch="300")
        .trigger(processingTime="0.5 seconds")
        .start()
    )
    # the HTTP consumer joins once Spark has taken rows: started together, a fast node let it drain the
    # queue before Spark's first batch
    consumer = threading.Thread(target=http_consumer)
    try:
        eventually_sync(
            lambda: sum(p["numInputRows"] for p in query.recentProgress) > 0,
            "Spark's first rows",
            timeout=60,
            interval=0.2,
        )
        consumer.start()
        eventually_sync(
            lambda: queue_stats(cluster.urls, "shared")["messages"] == 0,
            "the queue to empty",
            timeout=90,
            interval=0.2,
        )
    finally:
        stop.set()
        if consumer.is_alive():
            consumer.join()
        query.stop()
    by_spark = [r.id for r in spark.read.parquet(str(tmp_path / "out")).select("id").collect()]
    assert by_spark and taken_over_http, "both consumers should have taken part"
    assert len(by_spark) == len(set(by_spark))
    assert set(by_spark).isdisjoint(taken_over_http)
    assert sorted(by_spark + taken_over_http) == sorted(ids)


def test_the_leader_killed_while_the_query_runs_loses_and_duplicates_nothing(spark, tmp_path: Path) -> None:
    cluster = ProcessCluster.start(tmp_path / "cluster")
    try:
        ids = publish_orders(cluster.urls, "failover", 2000)
        query = (
            _stream_to_parquet(spark, ",".join(cluster.urls), "failover", tmp_path, maxRecordsPerBatch="200")
            .trigger(processingTime="0.5 seconds")
            .start()
        )
        try:
            eventually_sync(
                lambda: sum(p["numInputRows"] for p in query.recentProgress) >= 400,
                "some batches",
                timeout=60,
                interval=0.2,
            )
            leader = cluster.node(queue_stats(cluster.urls, "failover")["leader"])
            leader.kill()
            survivors = [n.url for n in cluster.nodes if n is not leader]
            eventually_sync(
                lambda: queue_stats(survivors, "failover")["messages"] == 0,
                "the queue to empty",
                timeout=90,
                interval=0.2,
            )
            assert query.exception() is None
        finally:
            query.stop()
        got = [r.id for r in spark.read.parquet(str(tmp_path / "out")).select("id").collect()]
        assert sorted(got) == sorted(ids)
    finally:
        cluster.stop()


def test_a_cancelled_consumer_fails_the_restarted_query_loudly(
    spark, cluster: ProcessCluster, tmp_path: Path
) -> None:
    publish_orders(cluster.urls, "cancelled", 300)
    nodes = ",".join(cluster.urls)
    query = _stream_to_parquet(spark, nodes, "cancelled", tmp_path, consumer="job", maxRecordsPerBatch="100")
    query.trigger(availableNow=True).start().awaitTermination()
    run(cluster.urls, lambda client: client.cancel("cancelled", "job"))
    publish_orders(cluster.urls, "cancelled", 10)
    restarted = query.trigger(availableNow=True).start()
    try:
        restarted.awaitTermination()
    except Exception as error:  # the StreamingQueryException names our SequenceGap
        assert "SequenceGap" in str(error) or "behind the checkpoint" in str(error)
    else:
        raise AssertionError("a query whose consumer was cancelled must not silently continue")


def test_the_reader_limits_by_messages_and_bytes_reports_the_backlog_and_closes_its_client(
    cluster: ProcessCluster,
) -> None:
    _publish_sized(cluster.urls, "reader-limits", [100] * 30)
    options = {"queue": "reader-limits", "maxMessagesPerTrigger": "25", "maxBytesPerTrigger": "1000"}
    reader = QuorumqStreamReader(SourceOptions.parse({"nodes": ",".join(cluster.urls), **options}))
    start = reader.initialOffset()
    assert reader.reportLatestOffset() is None, "nothing to report before the first batch is planned"
    assert reader.latestOffset(start, reader.getDefaultReadLimit()) == {"seq": 10}
    assert reader.reportLatestOffset() == {"seq": 30}
    assert reader.latestOffset({"seq": 10}, ReadMaxBytes(250)) == {"seq": 12}, "Spark's limit wins"
    assert reader.latestOffset({"seq": 12}, ReadAllAvailable()) == {"seq": 30}
    client = reader._client
    reader.stop()
    assert reader._client is None
    with pytest.raises(RuntimeError, match="closed"):
        client.queue("reader-limits")


def test_batches_keep_to_the_byte_limit_an_oversized_message_gets_its_own_and_progress_shows_the_backlog(
    spark, cluster: ProcessCluster, tmp_path: Path
) -> None:
    _publish_sized(cluster.urls, "by-bytes", [100] * 20 + [3000] + [100] * 20)
    options = {"maxMessagesPerTrigger": "25", "maxBytesPerTrigger": "1000"}
    query = _stream_to_parquet(spark, ",".join(cluster.urls), "by-bytes", tmp_path, **options)
    running = query.trigger(availableNow=True).start()
    running.awaitTermination()
    batches = [p for p in running.recentProgress if p["numInputRows"]]
    assert [p["numInputRows"] for p in batches] == [10, 10, 1, 10, 10]
    first = batches[0]["sources"][0]
    backlog = json.loads(first["latestOffset"])["seq"] - json.loads(first["endOffset"])["seq"]
    assert backlog == 31


def _after_every_message_of(nodes: list[str], queue: str) -> int:
    """A time (epoch ms) later than every message now in `queue` was enqueued, once the clock passed it."""
    since = max(d.published_at for d in run(nodes, lambda client: client.browse(queue))) + 1
    eventually_sync(
        lambda: time.time() * 1000 > since, "the clock to pass the last enqueue time", timeout=5, interval=0.2
    )
    return since


def test_a_batch_read_copies_a_dead_letter_queue_into_a_table_without_consuming_it(
    spark, cluster: ProcessCluster, tmp_path: Path
) -> None:
    nodes = ",".join(cluster.urls)

    async def direct(client: Client) -> None:
        await client.declare("dlq")
        await client.declare("dl-source", {"x-dead-letter-queue": "dlq"})
        await client.publish("dlq", [Message(f"d{i}", headers={"n": i, "kind": "direct"}) for i in range(5)])
        await client.durable_checkout("dlq", "someone", 1)  # a checked-out message is read too

    async def reject(client: Client) -> None:
        await client.publish("dl-source", ["rejected"])
        await client.nack_got("dl-source", [d.id for d in await client.get("dl-source")], requeue=False)

    run(cluster.urls, direct)
    since = _after_every_message_of(cluster.urls, "dlq")
    run(cluster.urls, reject)
    eventually_sync(
        lambda: queue_stats(cluster.urls, "dlq")["messages"] == 6, "the dead letter", timeout=30, interval=0.2
    )
    before = queue_stats(cluster.urls, "dlq")

    def read(**options: str):  # type: ignore[no-untyped-def]
        reader = spark.read.format("quorumq").option("nodes", nodes).option("queue", "dlq")
        for key, value in {"partitionSize": "2", **options}.items():
            reader = reader.option(key, value)
        return reader.load()

    read().write.parquet(str(tmp_path / "dead-letters"))
    table = {r.body.decode(): r for r in spark.read.parquet(str(tmp_path / "dead-letters")).collect()}
    assert sorted(table) == ["d0", "d1", "d2", "d3", "d4", "rejected"]
    assert table["d3"].headers == {"n": "3", "kind": "direct"}
    assert json.loads(table["rejected"].headers["x-death"])[0]["reason"] == "rejected"
    assert {(r.seq, r.redelivered, r.queue) for r in table.values()} == {(None, False, "dlq")}
    as_json = read(headersFormat="json").where("body = CAST('d3' AS BINARY)").first()
    assert as_json.headers == '{"kind":"direct","n":3}'
    assert [r.body for r in read(since=str(since)).collect()] == [b"rejected"]
    after = queue_stats(cluster.urls, "dlq")
    assert (after["messages_ready"], after["messages_unacknowledged"]) == (
        before["messages_ready"],
        before["messages_unacknowledged"],
    )


def test_a_batch_read_takes_every_message_of_a_partition_beyond_one_answers_byte_budget(
    spark, cluster: ProcessCluster
) -> None:
    """A browse answers at most 8 MiB of bodies: a 12 MiB partition is read in several pages, not cut
    at the first one's end."""
    body = b"x" * 4096
    ids = run(cluster.urls, lambda client: _declare_and_publish(client, "wide-bodies", [body] * 3000))
    read = spark.read.format("quorumq").option("nodes", ",".join(cluster.urls)).option("queue", "wide-bodies")
    assert sorted(r.id for r in read.load().select("id").collect()) == sorted(ids)


async def _declare_and_publish(client: Client, queue: str, bodies: list[bytes]) -> list[int]:
    await client.declare(queue)
    return await client.publish_all(queue, bodies, batch=500)


def test_a_stream_since_a_time_takes_only_newer_messages_with_their_sequence_and_redelivered_flag(
    spark, cluster: ProcessCluster, tmp_path: Path
) -> None:
    publish_orders(cluster.urls, "since-q", 5)
    since = _after_every_message_of(cluster.urls, "since-q")

    async def newer(client: Client) -> list[int]:
        ids = await client.publish("since-q", [f"new-{i}" for i in range(5)])
        await client.nack_got("since-q", [d.id for d in await client.get("since-q", since=since)])
        return ids

    ids = run(cluster.urls, newer)
    options = {"since": str(since), "maxMessagesPerTrigger": "3", "consumer": "since-job"}
    query = _stream_to_parquet(spark, ",".join(cluster.urls), "since-q", tmp_path, **options)
    query.trigger(availableNow=True).start().awaitTermination()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r.id for r in rows) == ids
    assert sorted(r.seq for r in rows) == [0, 1, 2, 3, 4]
    assert {r.id: (r.redelivered, r.delivery_count) for r in rows}[ids[0]] == (True, 1)
    assert sum(r.redelivered for r in rows) == 1
    assert queue_stats(cluster.urls, "since-q")["messages_ready"] == 5, "older messages stay in the queue"
