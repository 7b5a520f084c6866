"""The benchmark suite: which workloads run with which parameters, on one broker cluster at a time."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.backlog import BacklogResult, measure_backlog
from bench.driver_quorumq import QuorumqDriver
from bench.drivers import Cluster, Driver
from bench.quorumq_cluster import QuorumqCluster
from bench.rabbitmq_cluster import RabbitCluster
from bench.resources import NodeUsage, UsageSampler
from bench.workloads import CONSUME_QUEUE, WorkloadResult, drain, prefill, publish_confirms, publish_consume

KIB = 1024
BROKERS = ("quorumq", "rabbitmq")
WORKLOAD_KEYS = ("a-1k", "a-16k", "b-100", "b-1000", "c", "d")


@dataclass(frozen=True)
class Options:
    """Sizes and durations of every workload (the defaults are the documented run)."""

    duration: float = 10.0
    publishers: int = 4
    in_flight: int = 1000
    consume_count: int = 50_000
    rate: float = 1000.0
    queues: int = 50
    queue_in_flight: int = 100
    backlog: int = 1_000_000
    workloads: tuple[str, ...] = WORKLOAD_KEYS


@dataclass(frozen=True)
class Measurement:
    """One workload on one broker: its result and what each broker node used meanwhile."""

    key: str
    label: str
    broker: str
    result: WorkloadResult
    usage: dict[str, NodeUsage]
    client_cpu_seconds: float


@dataclass
class BrokerRun:
    """Everything measured on one broker."""

    broker: str
    client: str
    measurements: list[Measurement]
    backlog: BacklogResult | None


Workload = Callable[[Driver], Coroutine[Any, Any, WorkloadResult]]
Setup = Callable[[Driver], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class Shape:
    """One workload: `setup` (untimed, unsampled, may be None) then the measured `run`."""

    key: str
    label: str
    run: Workload
    setup: Setup | None = None


def workloads(options: Options) -> list[Shape]:
    """Every selected shape of the issue, in run order."""
    o = options
    shapes: list[Shape] = []
    for size in (1, 16):
        shapes.append(
            Shape(
                f"a-{size}k",
                f"(a) publish {size} KiB, {o.publishers} pub x {o.in_flight} unconfirmed",
                functools.partial(
                    publish_confirms,
                    body_size=size * KIB,
                    publishers=o.publishers,
                    in_flight=o.in_flight,
                    duration=o.duration,
                ),
            )
        )
    for prefetch in (100, 1000):
        shapes.append(
            Shape(
                f"b-{prefetch}",
                f"(b) consume {o.consume_count} x 1 KiB, prefetch {prefetch}",
                functools.partial(drain, queue=CONSUME_QUEUE, prefetch=prefetch, count=o.consume_count),
                setup=lambda d: prefill(d, CONSUME_QUEUE, o.consume_count, KIB),
            )
        )
    shapes.append(
        Shape(
            "c",
            f"(c) pub+consume {o.rate:g} msg/s 1 KiB, e2e latency",
            lambda d: publish_consume(d, body_size=KIB, duration=o.duration, rate=o.rate, prefetch=100),
        )
    )
    shapes.append(
        Shape(
            "d",
            f"(d) {o.queues} queues pub+consume, {o.queue_in_flight} unconfirmed each",
            lambda d: publish_consume(
                d,
                body_size=KIB,
                duration=o.duration,
                rate=None,
                queues=o.queues,
                in_flight=o.queue_in_flight,
                prefetch=o.queue_in_flight,
            ),
        )
    )
    return [shape for shape in shapes if shape.key in o.workloads]


async def run_suite(driver: Driver, cluster: Cluster, options: Options) -> BrokerRun:
    """The backlog measurement first, on the fresh cluster (when `options.backlog` > 0), then every
    selected workload, each with the CPU and RSS of the nodes and the CPU of this (client) process
    during its measured part (a setup such as pre-filling a queue is not counted)."""
    backlog = None
    if options.backlog > 0:
        backlog = await measure_backlog(driver, cluster, count=options.backlog, body_size=KIB)
    measurements = []
    for shape in workloads(options):
        if shape.setup is not None:
            await shape.setup(driver)
        client_cpu = time.process_time()
        with UsageSampler(cluster.pids()) as sampler:
            result = await shape.run(driver)
        client_cpu = time.process_time() - client_cpu
        measurements.append(
            Measurement(shape.key, shape.label, driver.broker, result, sampler.usage, client_cpu)
        )
    return BrokerRun(driver.broker, driver.client, measurements, backlog)


def start_cluster(broker: str, work_dir: Path) -> tuple[Cluster, Driver]:
    """Start a fresh 3-node cluster of `broker` under `work_dir` and a driver bound to it."""
    if broker == "quorumq":
        quorumq = QuorumqCluster.start(work_dir / "quorumq")
        return quorumq, QuorumqDriver(quorumq.urls)
    if broker == "rabbitmq":
        from bench.driver_rabbitmq import (
            RabbitDriver,
        )  # aio-pika is in the bench extra, not needed for quorumq

        rabbit = RabbitCluster.start(work_dir / "rabbitmq")
        return rabbit, RabbitDriver(rabbit.urls)
    raise ValueError(f"unknown broker {broker!r}; expected one of {BROKERS}")


def run_broker(broker: str, options: Options, work_dir: Path) -> BrokerRun:
    """Start `broker`'s cluster, run the suite against it, and stop it whatever happens."""
    cluster, driver = start_cluster(broker, work_dir)
    try:
        return asyncio.run(run_suite(driver, cluster, options))
    finally:
        cluster.stop()
