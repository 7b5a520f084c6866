"""What a workload is, independent of the client that runs it: sizes, counts, concurrency and duration.

Every runner (bench/runner.py) takes these and runs them its own way: our asyncio drivers in this
process, RabbitMQ's Java client in a JVM, wrk for quorumq's JSON contract."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Publish:
    """`publishers` connections publish `body_size` bodies with confirms, `in_flight` unconfirmed each,
    for `duration` seconds; with `spread`, publisher i talks to node i mod 3 (not the queue's leader).
    Latency is send to confirm."""

    body_size: int
    publishers: int
    in_flight: int
    duration: float
    spread: bool = False
    queue: str = "bench-publish"


@dataclass(frozen=True)
class Drain:
    """One consumer with manual acks and `prefetch` unacked drains `count` messages of `body_size`
    from a queue filled beforehand (the fill is not timed)."""

    count: int
    body_size: int
    prefetch: int
    queue: str = "bench-consume"


@dataclass(frozen=True)
class Flow:
    """Publish and consume at once on `queues` queues (queue i on node i mod 3): at `rate` msg/s in all
    when given, else `in_flight` unconfirmed per publisher. Latency is send to delivery."""

    body_size: int
    duration: float
    rate: float | None
    queues: int
    in_flight: int
    prefetch: int


Spec = Publish | Drain | Flow
