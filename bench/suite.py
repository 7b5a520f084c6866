"""The benchmark suite: which workloads run with which parameters, through which clients, per broker."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import resource
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.asyncio_runner import AsyncioRunner
from bench.backlog import BacklogResult, Fill, measure_backlog
from bench.driver_quorumq import QuorumqDriver
from bench.drivers import Cluster, Driver
from bench.quorumq_cluster import QuorumqCluster
from bench.rabbitmq_cluster import RabbitCluster
from bench.resources import NodeUsage, UsageSampler
from bench.runner import Runner
from bench.specs import Drain, Flow, Publish, Spec
from bench.workloads import WorkloadResult, prefill

KIB = 1024
BROKERS = ("quorumq", "rabbitmq")
CLIENTS = {
    "quorumq": ("python", "wrk", "java"),
    "rabbitmq": ("java", "aio-pika"),
}
CLIENT_CHOICES = tuple(f"{broker}:{client}" for broker, clients in CLIENTS.items() for client in clients)
WORKLOAD_KEYS = ("a-1k", "a-16k", "s-1k", "b-100", "b-1000", "b16-1000", "c", "d")
Step = Callable[[str], None]
"""Told what the benchmark does next (its progress display)."""


@dataclass(frozen=True)
class Options:
    """Sizes and durations of every workload (the defaults are the documented run)."""

    duration: float = 10.0
    publishers: int = 4
    in_flight: int = 1000
    single_publishers: int = 100
    consume_count: int = 50_000
    rate: float = 1000.0
    queues: int = 50
    queue_in_flight: int = 100
    backlog: int = 1_000_000
    restart_poll: str = "guest"  # how the backlog's restart poll authenticates to quorumq: guest, user, token
    workloads: tuple[str, ...] = WORKLOAD_KEYS
    clients: tuple[str, ...] = CLIENT_CHOICES


@dataclass(frozen=True)
class Shape:
    """One workload: its key, its label in the table and what it is."""

    key: str
    label: str
    spec: Spec


@dataclass(frozen=True)
class Measurement:
    """One workload through one client: its result and what each broker node used meanwhile."""

    key: str
    label: str
    result: WorkloadResult
    usage: dict[str, NodeUsage]
    client_cpu_seconds: float


@dataclass
class BrokerRun:
    """Everything measured on one broker through one client."""

    broker: str
    client: str
    description: str
    measurements: list[Measurement]
    backlog: BacklogResult | None


def workloads(options: Options) -> list[Shape]:
    """Every selected shape, in run order."""
    o = options
    shapes = [
        Shape(
            f"a-{size}k",
            f"(a) publish {size} KiB, {o.publishers} pub x {o.in_flight} unconfirmed",
            Publish(size * KIB, o.publishers, o.in_flight, o.duration),
        )
        for size in (1, 16)
    ]
    shapes.append(
        Shape(
            "s-1k",
            f"(s) publish 1 KiB one per request, {o.single_publishers} pub x 1 over all nodes",
            Publish(KIB, o.single_publishers, 1, o.duration, spread=True, queue="bench-single"),
        )
    )
    for size, prefetch in ((1, 100), (1, 1000), (16, 1000)):
        shapes.append(
            Shape(
                f"b-{prefetch}" if size == 1 else f"b{size}-{prefetch}",
                f"(b) consume {o.consume_count} x {size} KiB, prefetch {prefetch}",
                Drain(o.consume_count, size * KIB, prefetch),
            )
        )
    shapes.append(
        Shape(
            "c",
            f"(c) pub+consume {o.rate:g} msg/s 1 KiB, e2e latency",
            Flow(KIB, o.duration, o.rate, queues=1, in_flight=1000, prefetch=100),
        )
    )
    shapes.append(
        Shape(
            "d",
            f"(d) {o.queues} queues pub+consume, {o.queue_in_flight} unconfirmed each",
            Flow(KIB, o.duration, None, o.queues, o.queue_in_flight, o.queue_in_flight),
        )
    )
    return [shape for shape in shapes if shape.key in o.workloads]


def _cpu_seconds() -> float:
    """CPU used by this process and its waited-for children (Java and wrk run as children)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def run_client(
    runner: Runner, cluster: Cluster, options: Options, step: Step = lambda _: None
) -> list[Measurement]:
    """Every selected shape `runner` supports, each with the nodes' CPU and RSS and the client's CPU
    during its measured part (a setup such as filling a queue is not counted); `step` is told of each."""
    measurements = []
    for shape in workloads(options):
        if not runner.supports(shape.spec):
            continue
        step(f"{runner.description}: {shape.label}")
        await runner.setup(shape.spec)
        client_cpu = _cpu_seconds()
        with UsageSampler(cluster.pids()) as sampler:
            result = await runner.run(shape.spec)
        measurements.append(
            Measurement(shape.key, shape.label, result, sampler.usage, _cpu_seconds() - client_cpu)
        )
    return measurements


@contextlib.contextmanager
def running_cluster(broker: str, work_dir: Path) -> Iterator[Cluster]:
    """A fresh 3-node cluster of `broker` under `work_dir`, stopped whatever happens."""
    cluster: Cluster
    if broker == "quorumq":
        cluster = QuorumqCluster.start(work_dir / "quorumq")
    elif broker == "rabbitmq":
        cluster = RabbitCluster.start(work_dir / "rabbitmq")
    else:
        raise ValueError(f"unknown broker {broker!r}; expected one of {BROKERS}")
    try:
        yield cluster
    finally:
        cluster.stop()


async def _measure(
    broker: str, cluster: Cluster, options: Options, work_dir: Path, step: Step
) -> list[BrokerRun]:
    """The backlog first, on the fresh cluster (when `options.backlog` > 0), then each selected client."""
    backlog = None
    runners: dict[str, Runner] = {}
    driver: Driver
    fill: Fill
    wanted = [c for c in CLIENTS[broker] if f"{broker}:{c}" in options.clients]
    if broker == "quorumq":
        quorumq = QuorumqDriver(cluster.urls)
        if options.restart_poll != "guest":
            await quorumq.poll_as_user(token=options.restart_poll == "token")
        driver = quorumq
        fill = functools.partial(prefill, driver)
        if "python" in wanted:
            runners["Python client"] = AsyncioRunner(driver, "Python client")
        if "wrk" in wanted:
            from bench.wrk_runner import WrkRunner

            runners["wrk, JSON"] = WrkRunner(cluster.urls)
        if "java" in wanted:  # the same client that drives RabbitMQ, through the AMQP listener
            from bench.java_runner import JavaRunner

            assert isinstance(cluster, QuorumqCluster)
            runners["Java client, AMQP"] = JavaRunner(cluster.amqp_urls, work_dir / "java-classes")
    else:
        from bench.driver_rabbitmq import RabbitDriver  # aio-pika is in the bench extra
        from bench.java_runner import JavaRunner

        driver = RabbitDriver(cluster.urls)
        java = JavaRunner(cluster.urls, work_dir / "java-classes")
        fill = java.fill
        if "java" in wanted:
            runners["Java client"] = java
        if "aio-pika" in wanted:
            runners["aio-pika"] = AsyncioRunner(driver, "aio-pika")
    if options.backlog > 0:
        step(f"{broker}: filling the backlog of {options.backlog:,} messages, then restarting a node")
        backlog = await measure_backlog(driver, fill, cluster, count=options.backlog, body_size=KIB)
    runs = []
    for client, runner in runners.items():
        measurements = await run_client(runner, cluster, options, step)
        runs.append(BrokerRun(driver.broker, client, runner.description, measurements, backlog))
        backlog = None  # reported once per broker
    return runs


def run_broker(broker: str, options: Options, work_dir: Path, step: Step = lambda _: None) -> list[BrokerRun]:
    """Start `broker`'s cluster, run the selected clients against it, and stop it whatever happens;
    `step` is told what runs at each step (the benchmark's progress)."""
    with running_cluster(broker, work_dir) as cluster:
        return asyncio.run(_measure(broker, cluster, options, work_dir, step))
