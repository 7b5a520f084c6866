"""Runs workload specs in this process through a Python driver (bench/drivers.py)."""

from __future__ import annotations

from bench.drivers import Driver
from bench.specs import Drain, Flow, Publish, Spec
from bench.workloads import WorkloadResult, drain, prefill, publish_confirms, publish_consume


class AsyncioRunner:
    """A Python asyncio client (our quorumq.Client, or aio-pika) running every spec."""

    def __init__(self, driver: Driver, client: str) -> None:
        self.driver = driver
        self.client = client
        self.description = driver.client

    def supports(self, spec: Spec) -> bool:
        return True

    async def setup(self, spec: Spec) -> None:
        if isinstance(spec, Drain):
            await prefill(self.driver, spec.queue, spec.count, spec.body_size)

    async def run(self, spec: Spec) -> WorkloadResult:
        if isinstance(spec, Publish):
            return await publish_confirms(self.driver, spec)
        if isinstance(spec, Drain):
            return await drain(self.driver, spec.queue, prefetch=spec.prefetch, count=spec.count)
        assert isinstance(spec, Flow)
        return await publish_consume(
            self.driver,
            body_size=spec.body_size,
            duration=spec.duration,
            rate=spec.rate,
            queues=spec.queues,
            in_flight=spec.in_flight,
            prefetch=spec.prefetch,
        )
