"""RabbitMQ's Java client (Debian's amqp-client 5, the one the benchmarks drive RabbitMQ with) against a
node's AMQP listener, through the benchmark's own program (bench/java/Bench.java): it declares a quorum
queue, publishes with confirms, waiting for each, and drains it with manual acks. And through a topic
exchange (java/ExchangeRoutes.java): routed with confirms, unroutable `mandatory` messages returned."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pika
import pytest

from bench.java_runner import JARS, compile_bench, ensure_java_client
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER

pytestmark = pytest.mark.process

COUNT = 500
EXCHANGE_ROUTES = Path(__file__).parent / "java" / "ExchangeRoutes.java"


def bench(classpath: str, mode: str, url: str, *options: str) -> dict[str, object]:
    """Run Bench.java in `mode` and return its report (it fails the test on any failure it counts)."""
    argv = ["java", "-cp", classpath, "Bench", mode, "--uris", url, *options]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    assert report.get("failures", 0) == 0, report
    return report


def test_the_java_client_publishes_with_confirms_and_drains_with_acks(amqp_port: int, tmp_path: Path) -> None:
    classpath = compile_bench(tmp_path / "classes")
    url = f"amqp://{HARNESS_USER}:{HARNESS_PASSWORD}@127.0.0.1:{amqp_port}"  # a bare "/" is vhost ""
    bench(classpath, "declare", url, "--queue", "java")
    assert (
        bench(classpath, "fill", url, "--queue", "java", "--count", str(COUNT), "--size", "100")["messages"]
        == COUNT
    )
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    connection = pika.BlockingConnection(
        pika.ConnectionParameters("127.0.0.1", amqp_port, credentials=credentials)
    )
    try:
        channel = connection.channel()
        assert channel.queue_declare("java", passive=True).method.message_count == COUNT
        # It acks with `multiple` every prefetch/4 messages (10 here), and closes once it counted the 500th
        # delivery, which it counts before acking: that last ack may leave after the close (the program
        # races itself), and then its 10 messages return, as they would to RabbitMQ.
        drained = bench(classpath, "drain", url, "--queue", "java", "--count", str(COUNT), "--prefetch", "40")
        assert drained["messages"] == COUNT
        assert channel.queue_declare("java", passive=True).method.message_count in (0, 10)
    finally:
        connection.close()


def test_the_java_client_publishes_through_a_topic_exchange_and_gets_returns(
    amqp_port: int, tmp_path: Path
) -> None:
    ensure_java_client()
    classpath = ":".join(JARS)
    subprocess.run(["javac", "-d", str(tmp_path), "-cp", classpath, str(EXCHANGE_ROUTES)], check=True)
    url = f"amqp://{HARNESS_USER}:{HARNESS_PASSWORD}@127.0.0.1:{amqp_port}"
    argv = ["java", "-cp", f"{tmp_path}:{classpath}", "ExchangeRoutes", url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"eu": 2, "all": 4, "returned": 1, "acked": True}
