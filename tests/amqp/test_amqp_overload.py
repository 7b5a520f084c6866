"""An overloaded queue leader (503 `overloaded`, issue 40 slice 3) is, to the AMQP listener, a publish
batch to try again with its seq (`api.amqp.channel`): every message an AMQP publisher sends is confirmed
and enqueued once, however many of its batches the leader held back."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import aio_pika
import pytest

from cli.node_processes import ProcessCluster
from quorumq import Client

pytestmark = pytest.mark.process

CHANNELS = 8
PER_CHANNEL = 25


@pytest.fixture
def tight_amqp_node(tmp_path: Path) -> Iterator[ProcessCluster]:
    """One node serving AMQP whose leaders hold at most one operation not yet applied per queue."""
    cluster = ProcessCluster.start(tmp_path, count=1, amqp=True, env={"QUORUMQ_MAX_UNAPPLIED_PROPOSALS": "1"})
    try:
        yield cluster
    finally:
        cluster.stop()


async def _publish_on_channels(url: str) -> None:
    """CHANNELS channels publish PER_CHANNEL messages each at once, every one awaited to its confirm."""
    async with await aio_pika.connect(url) as connection:
        channels = [await connection.channel(publisher_confirms=True) for _ in range(CHANNELS)]
        await channels[0].declare_queue("held", durable=True, arguments={"x-queue-type": "quorum"})
        await asyncio.gather(
            *(
                channel.default_exchange.publish(aio_pika.Message(f"c{c}m{m}".encode()), routing_key="held")
                for c, channel in enumerate(channels)
                for m in range(PER_CHANNEL)
            )
        )


async def test_publishes_held_back_by_an_overloaded_leader_are_retried_and_confirmed_once(
    tight_amqp_node: ProcessCluster,
) -> None:
    cluster = tight_amqp_node
    await asyncio.wait_for(_publish_on_channels(cluster.amqp_urls[0] + "/%2F"), 90)
    async with Client(cluster.urls, timeout=30.0) as client:
        got = await client.get("held", count=CHANNELS * PER_CHANNEL + 1, ack="auto")
        metrics = await client.metrics_text()
    expected = [f"c{c}m{m}".encode() for c in range(CHANNELS) for m in range(PER_CHANNEL)]
    assert sorted(m.body for m in got) == sorted(expected)
    refused = re.search(r'^quorumq_publishes_overloaded_total\{queue="held"\} (\S+)$', metrics, re.M)
    assert refused is not None and float(refused.group(1)) > 0, "the leader held batches back"
