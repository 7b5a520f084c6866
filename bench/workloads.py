"""The workload shapes, written once against the Driver protocol and run unchanged on both brokers."""

from __future__ import annotations

import asyncio
import functools
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from bench.drivers import Connection, Driver
from bench.latency import latency_ms
from bench.specs import Publish

STAMP = struct.Struct("<d")
DRAIN_TIMEOUT_S = 30.0
PREFILL_PUBLISHERS = 4
PREFILL_IN_FLIGHT = 1000
CONSUME_QUEUE = "bench-consume"


@dataclass
class WorkloadResult:
    """Messages completed in `seconds`, with per-message latencies (seconds) where the workload has them,
    or only their percentiles (ms) where the client reports no samples (wrk)."""

    messages: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    latency_summary_ms: dict[str, float] | None = None

    @property
    def rate(self) -> float:
        """Messages per second."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def has_latencies(self) -> bool:
        """Whether the workload measured latencies at all."""
        return bool(self.latencies) or self.latency_summary_ms is not None

    def latency_ms(self) -> dict[str, float]:
        """p50/p99/p999 in milliseconds (NaN where nothing was measured)."""
        return self.latency_summary_ms or latency_ms(self.latencies)


def stamped_body(size: int) -> bytes:
    """A body of `size` bytes starting with the send time (perf_counter, seconds)."""
    return STAMP.pack(time.perf_counter()) + bytes(max(0, size - STAMP.size))


def age_of(body: bytes) -> float:
    """Seconds since a stamped body was made."""
    return time.perf_counter() - STAMP.unpack_from(body)[0]


async def _confirmed_sender(
    connection: Connection,
    body_size: int,
    in_flight: int,
    until: float,
    rate: float | None,
    sink: list[float],
) -> None:
    """Send stamped bodies until `until` (paced at `rate` msg/s when given), appending confirm latencies."""
    loop = asyncio.get_running_loop()
    slots = asyncio.Semaphore(in_flight)
    failures: list[BaseException] = []

    def confirmed(started: float, confirm: asyncio.Future[Any]) -> None:
        slots.release()
        if confirm.cancelled() or confirm.exception() is not None:
            failures.append(confirm.exception() or asyncio.CancelledError())
        else:
            sink.append(time.perf_counter() - started)

    began = loop.time()
    sent = 0
    while (now := loop.time()) < until and not failures:
        if rate is not None and sent >= (now - began) * rate:
            await asyncio.sleep(min(0.005, until - now))
            continue
        await slots.acquire()
        started = time.perf_counter()
        confirm = await connection.send(stamped_body(body_size))
        confirm.add_done_callback(functools.partial(confirmed, started))
        sent += 1
    await connection.flush()
    if failures:
        raise RuntimeError(f"{len(failures)} publishes failed") from failures[0]


async def publish_confirms(driver: Driver, spec: Publish) -> WorkloadResult:
    """Publishers with confirms as `spec` says (bench/specs.py Publish)."""
    await driver.declare(spec.queue)
    connections = [
        await driver.connect(
            spec.queue, home=i if spec.spread else 0, in_flight=spec.in_flight, direct=spec.spread
        )
        for i in range(spec.publishers)
    ]
    latencies: list[float] = []
    start = time.perf_counter()
    try:
        until = asyncio.get_running_loop().time() + spec.duration
        await asyncio.gather(
            *(
                _confirmed_sender(c, spec.body_size, spec.in_flight, until, None, latencies)
                for c in connections
            )
        )
    finally:
        elapsed = time.perf_counter() - start
        for connection in connections:
            await connection.close()
    return WorkloadResult(len(latencies), elapsed, latencies)


async def prefill(driver: Driver, queue: str, count: int, body_size: int) -> None:
    """Declare `queue` afresh and put `count` confirmed messages of `body_size` bytes in it."""
    await driver.declare(queue)
    connections = [
        await driver.connect(queue, in_flight=PREFILL_IN_FLIGHT) for _ in range(PREFILL_PUBLISHERS)
    ]
    try:

        async def fill(connection: Connection, share: int) -> None:
            slots = asyncio.Semaphore(PREFILL_IN_FLIGHT)
            for _ in range(share):
                await slots.acquire()
                confirm = await connection.send(bytes(body_size))
                confirm.add_done_callback(lambda _: slots.release())
            await connection.flush()

        shares = [count // len(connections) + (i < count % len(connections)) for i in range(len(connections))]
        await asyncio.gather(*(fill(c, share) for c, share in zip(connections, shares, strict=True)))
    finally:
        for connection in connections:
            await connection.close()


async def drain(driver: Driver, queue: str, *, prefetch: int, count: int) -> WorkloadResult:
    """(b) Consume `count` pre-filled messages from `queue` with manual acks and `prefetch` unacked."""
    connection = await driver.connect(queue)
    received = 0
    done = asyncio.Event()

    def on_message(_body: bytes) -> None:
        nonlocal received
        received += 1
        if received >= count:
            done.set()

    start = time.perf_counter()
    consumer = asyncio.create_task(connection.consume(prefetch, on_message, done))
    try:
        await asyncio.wait_for(asyncio.shield(done.wait()), timeout=DRAIN_TIMEOUT_S + count / 100)
        elapsed = time.perf_counter() - start
        await consumer
    finally:
        done.set()
        await asyncio.gather(consumer, return_exceptions=True)
        await connection.close()
    return WorkloadResult(received, elapsed)


async def publish_consume(
    driver: Driver,
    *,
    body_size: int,
    duration: float,
    rate: float | None,
    queues: int = 1,
    in_flight: int = 1000,
    prefetch: int = 1000,
) -> WorkloadResult:
    """(c)/(d) Publish and consume at once on `queues` queues (spread over the nodes).

    With `rate` the total offered rate is fixed (split evenly over the queues); without it every
    publisher keeps `in_flight` unconfirmed. Latency is end to end: send to delivery."""
    names = [f"bench-flow-{i}" for i in range(queues)]
    for index, name in enumerate(names):
        await driver.declare(name, home=index)
    publishers = [await driver.connect(n, home=i, in_flight=in_flight) for i, n in enumerate(names)]
    consumers = [await driver.connect(n, home=i) for i, n in enumerate(names)]
    latencies: list[float] = []
    confirms: list[float] = []
    stop = asyncio.Event()

    def on_message(body: bytes) -> None:
        latencies.append(age_of(body))

    consuming = [asyncio.create_task(c.consume(prefetch, on_message, stop)) for c in consumers]
    start = time.perf_counter()
    try:
        until = asyncio.get_running_loop().time() + duration
        share = None if rate is None else rate / queues
        await asyncio.gather(
            *(_confirmed_sender(p, body_size, in_flight, until, share, confirms) for p in publishers)
        )
        deadline = time.perf_counter() + DRAIN_TIMEOUT_S
        while len(latencies) < len(confirms) and time.perf_counter() < deadline:
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - start
    finally:
        stop.set()
        await asyncio.gather(*consuming, return_exceptions=True)
        for connection in (*publishers, *consumers):
            await connection.close()
    return WorkloadResult(len(latencies), elapsed, latencies)
