"""The `client` nemesis really kills a client mid-request on a real cluster in network namespaces: a
crashed consumer's unacked deliveries go to another consumer, and a publisher killed with its publish on
the wire leaves an `info` that the checker accepts; both come back as new clients when healed."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from support.eventually import eventually

from jepsen_tests.checker import check_total_queue
from jepsen_tests.client_life import CRASHED
from jepsen_tests.client_nemesis import ClientNemesis
from jepsen_tests.cluster import JepsenCluster
from jepsen_tests.history import HistoryWriter, read_history
from jepsen_tests.workload import CONSUMER_TIMEOUT_MS, Workload, WorkloadConfig, dead_letter_queue
from quorumq import Client

pytestmark = pytest.mark.faults

VALUES = 200
LATE = 20
POLITE = {"nack_probability": 0.0, "cancel_probability": 0.0, "reject_probability": 0.0}


def drawing(variant: str) -> random.Random:
    """A Random whose first choice among the client nemesis' variants is `variant`."""
    seed = next(s for s in range(100) if random.Random(s).choice(ClientNemesis.variants) == variant)
    return random.Random(seed)


async def queue_stats(cluster: JepsenCluster, queue: str) -> dict:
    async with Client(cluster.urls, timeout=10.0) as client:
        return await client.queue(queue)


async def test_crashed_consumer_unacked_deliveries_are_redelivered_to_another_consumer(
    healed: JepsenCluster, tmp_path: Path
) -> None:
    cluster, queue = healed, "crash-consumer"
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.declare(queue, {"x-quorum-initial-group-size": 3})
        await client.publish(queue, [str(v) for v in range(VALUES)])
    history = HistoryWriter(tmp_path / "history.jsonl")
    workload = Workload(cluster.urls, history, WorkloadConfig((queue,), 0, 1, **POLITE), random.Random(1))
    cluster.clients = workload
    stop = asyncio.Event()
    running = asyncio.create_task(workload.run(stop))

    async def consumer_acked_some() -> bool:
        return (await queue_stats(cluster, queue))["messages"] < VALUES

    await eventually(consumer_acked_some, "the workload's consumer to ack", timeout=30, interval=0.1)
    fault = await asyncio.to_thread(ClientNemesis().inject, cluster, [queue], drawing("consumer"))
    assert (fault.kind, fault.description.split(" with ")[0]) == ("consumer", "killed con0")

    # con0 may have emptied the queue before it died: what arrives now, the server hands to the only
    # consumer it knows, the dead one, which never settles it; its timeout must hand it on
    async with Client(cluster.urls, timeout=30.0) as client:
        await client.publish(queue, [str(v) for v in range(VALUES, VALUES + LATE)])

    async def the_dead_holds_deliveries() -> bool:
        return (await queue_stats(cluster, queue))["messages_unacknowledged"] > 0

    await eventually(
        the_dead_holds_deliveries,
        "the dead consumer to hold some",
        timeout=CONSUMER_TIMEOUT_MS / 1000 / 2,
        interval=0.1,
    )

    other: set[int] = set()
    async with Client(cluster.urls, timeout=30.0) as client:
        tag = await client.consume(queue, prefetch=50)

        async def other_took_the_rest() -> bool:
            batch = await client.deliveries(queue, tag, max=50, wait=0.5)
            if batch:
                await client.ack(queue, tag, [d.id for d in batch])
                other.update(int(d.body) for d in batch)
            return (await queue_stats(cluster, queue))["messages"] == 0

        await eventually(
            other_took_the_rest, "the queue to empty", timeout=30 + CONSUMER_TIMEOUT_MS / 1000, interval=0.1
        )
    fault.heal()
    stop.set()
    await running
    history.close()
    processed = [op for op in read_history(history.path) if op.type == "ok"]
    acked_by_con0 = {op.value for op in processed if op.error is None}
    # a value con0 processed as it was killed mid-ack is gone if that ack landed, else redelivered
    assert other | {op.value for op in processed} >= set(range(VALUES + LATE))
    assert not other & acked_by_con0


async def test_publisher_killed_mid_publish_leaves_an_info_the_checker_accepts(
    healed: JepsenCluster, tmp_path: Path
) -> None:
    cluster, queue = healed, "crash-publisher"
    async with Client(cluster.urls, timeout=30.0) as client:
        for declared in (queue, dead_letter_queue(queue)):
            await client.declare(declared, {"x-quorum-initial-group-size": 3})
    history = HistoryWriter(tmp_path / "history.jsonl")
    workload = Workload(cluster.urls, history, WorkloadConfig((queue,), 1, 0, **POLITE), random.Random(2))
    cluster.clients = workload
    stop = asyncio.Event()
    running = asyncio.create_task(workload.run(stop))

    def published(count: int) -> Callable[[], Awaitable[bool]]:
        async def enough() -> bool:
            return (await queue_stats(cluster, queue))["messages"] >= count

        return enough

    await eventually(published(10), "the workload to publish", timeout=30, interval=0.1)
    fault = await asyncio.to_thread(ClientNemesis().inject, cluster, [queue], drawing("publisher"))
    assert fault.description == f"killed pub0 with POST /api/queues/{queue}/messages on the wire"
    before = (await queue_stats(cluster, queue))["messages"]
    fault.heal()
    await eventually(published(before + 10), "the restarted publisher to publish", timeout=30, interval=0.1)
    stop.set()
    await running
    assert await workload.drain(30) == {queue: 0, dead_letter_queue(queue): 0}
    history.close()
    ops = read_history(history.path)
    crashed = [op for op in ops if op.f == "enqueue" and op.type == "info"]
    assert [op.error for op in crashed] == [CRASHED]
    verdict = check_total_queue(ops)
    assert verdict.valid, verdict.summary()
    assert verdict.info_enqueues == 1
    assert crashed[0].value in verdict.recovered or crashed[0].value not in verdict.ok
