"""RabbitMQ's side of the benchmark runs through its Java client (bench/java/Bench.java) against a real
RabbitMQ node from Debian's rabbitmq-server, the same client drives quorumq through its AMQP listener,
and the table puts quorumq's ratio against RabbitMQ's."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.java_runner import JavaRunner
from bench.quorumq_cluster import QuorumqCluster
from bench.rabbitmq_cluster import RabbitCluster
from bench.report import rows
from bench.specs import Drain, Flow, Publish
from bench.suite import BrokerRun, Measurement
from bench.workloads import WorkloadResult

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rabbit() -> Iterator[RabbitCluster]:
    # the rabbitmq user must reach the node's directories, which pytest's tmp_path (0700) does not allow
    base = Path(tempfile.mkdtemp(prefix="quorumq-java-anchor-"))
    base.chmod(0o755)
    cluster = RabbitCluster.start(base / "rabbitmq", count=1)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def quorumq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuorumqCluster]:
    cluster = QuorumqCluster.start(tmp_path_factory.mktemp("quorumq-java"), count=1)
    try:
        yield cluster
    finally:
        cluster.stop()


def test_the_java_client_publishes_drains_and_flows_with_latencies(
    rabbit: RabbitCluster, tmp_path: Path
) -> None:
    run_every_mode(JavaRunner(rabbit.urls, tmp_path / "classes"))


def test_the_same_java_client_drives_quorumq_through_its_amqp_listener(
    quorumq: QuorumqCluster, tmp_path: Path
) -> None:
    run_every_mode(JavaRunner(quorumq.amqp_urls, tmp_path / "classes"))


def run_every_mode(runner: JavaRunner) -> None:
    """Publish, drain and flow a little through `runner`, and check what it reports."""

    async def run_all() -> list[WorkloadResult]:
        specs = [
            Publish(1024, publishers=4, in_flight=1, duration=1.0, spread=True, queue="smoke-single"),
            Drain(count=300, body_size=16 * 1024, prefetch=100, queue="smoke-drain"),
            Flow(1024, duration=1.0, rate=200.0, queues=2, in_flight=50, prefetch=50),
        ]
        results = []
        for spec in specs:
            await runner.setup(spec)
            results.append(await runner.run(spec))
        return results

    single, drained, flowed = asyncio.run(run_all())
    assert single.messages > 0 and len(single.latencies) == single.messages
    assert drained.messages == 300
    assert flowed.messages > 0 and len(flowed.latencies) == flowed.messages
    assert all(0 < latency < 60 for latency in (*single.latencies, *flowed.latencies))


def test_a_java_client_failure_is_an_error_not_a_figure(rabbit: RabbitCluster, tmp_path: Path) -> None:
    runner = JavaRunner([rabbit.urls[0].replace("guest:guest", "guest:wrong")], tmp_path / "classes")
    with pytest.raises(RuntimeError, match=r"Bench\.java publish exited"):
        asyncio.run(runner.run(Publish(1024, publishers=1, in_flight=1, duration=1.0)))


def test_the_ratio_is_taken_against_rabbitmqs_fastest_client() -> None:
    def run(broker: str, client: str, rate: float) -> BrokerRun:
        result = WorkloadResult(int(rate), 1.0, [0.01] * int(rate))
        return BrokerRun(broker, client, "", [Measurement("s-1k", "(s)", result, {}, 0.0)], None)

    table = rows(
        [
            run("quorumq", "wrk, JSON", 300),
            run("RabbitMQ", "Java client", 600),
            run("RabbitMQ", "aio-pika", 200),
        ]
    )
    ours = next(row for row in table if row[1] == "quorumq (wrk, JSON)")
    assert ours[-1] == "msg/s x0.50, p99 x1.00 (vs Java client)"
