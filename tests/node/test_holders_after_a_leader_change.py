"""What a queue's holders keep across a leader change, on a real 3-node cluster: messages a manual-ack get
holds still time out on the new leader, a consumer reading from a time (`since`) carries on there with
its tag, and peek reads the same position through any node."""

from __future__ import annotations

import asyncio
import time

from node_helpers import every_node_writes_the_newest_queue_ops
from support.eventually import eventually

from cli.node_processes import ProcessCluster
from quorumq import Client

CONSUMER_TIMEOUT_MS = 6000  # long enough for the transfer to finish before the old leader's timer fires
PATIENT_S = 30.0


async def _until_ready(client: Client, queue: str, ready: int) -> dict:
    async def stats() -> dict:
        found = await client.queue(queue)
        assert found["messages_ready"] == ready, f"{found['messages_ready']} ready"
        return found

    return await eventually(stats, f"{queue} to have {ready} ready", timeout=PATIENT_S, interval=0.2)


async def _move_leader(client: Client, queue: str) -> str:
    stats = await client.queue(queue)
    successor = next(m for m in stats["members"] if m != stats["leader"])
    await client.transfer_leader(queue, successor)
    assert (await client.queue(queue))["leader"] == successor
    return successor


def test_rule_get_holders_time_out_after_a_leader_change(tmp_path) -> None:
    cluster = ProcessCluster.start(tmp_path, env={"QUORUMQ_CONSUMER_TIMEOUT_MS": str(CONSUMER_TIMEOUT_MS)})

    async def scenario() -> tuple[dict, dict, list[int]]:
        async with Client(cluster.urls, timeout=PATIENT_S) as client:
            await client.declare("held")
            await client.publish("held", ["a", "b", "c"])
            taken = await client.get("held", count=2, ack="manual")
            assert [m.id for m in taken] == [1, 2]
            await _move_leader(client, "held")
            moved = await client.queue("held")
            after = await _until_ready(client, "held", 3)  # the new leader timed the holder out
            counts = [m.delivery_count for m in await client.browse("held")]
            return moved, after, counts

    try:
        moved, after, counts = asyncio.run(scenario())
    finally:
        cluster.stop()
    assert moved["messages_unacknowledged"] == 2  # still held when the leader moved
    assert after["messages_unacknowledged"] == 0
    assert counts == [1, 1, 0]  # a timed-out get is a failed delivery


def test_rule_since_consumer_survives_a_leader_change(tmp_path) -> None:
    cluster = ProcessCluster.start(tmp_path)

    async def scenario() -> tuple[list[bytes], list[bytes], dict]:
        async with Client(cluster.urls, timeout=PATIENT_S) as client:
            await client.declare("reading")
            await client.publish("reading", ["old"])
            [old] = await client.browse("reading")
            assert old.published_at is not None
            await client.publish("reading", ["new1", "new2", "new3"])
            tag = await client.consume("reading", prefetch=2, since=old.published_at + 1)
            first = await client.deliveries("reading", tag, max=10, wait=5.0)
            await _move_leader(client, "reading")
            got = [m.body for m in first]
            again: list[bytes] = []
            deadline = time.monotonic() + PATIENT_S
            while len(set(got + again)) < 4 and time.monotonic() < deadline:
                batch = await client.deliveries("reading", tag, max=10, wait=1.0)  # the same tag
                if batch:
                    await client.ack("reading", tag, [m.id for m in batch])
                again += [m.body for m in batch]
            await client.cancel("reading", tag)
            return got, again, await client.queue("reading")

    try:
        every_node_writes_the_newest_queue_ops(cluster)  # before: a since consumer is the leader's own
        got, again, stats = asyncio.run(scenario())
    finally:
        cluster.stop()
    assert got == [b"new1", b"new2"]  # its prefetch, from its time on
    assert sorted(set(got + again)) == [b"new1", b"new2", b"new3"]
    assert again[:2] == [b"new1", b"new2"]  # what it held is handed to it again on the new leader
    assert (stats["messages"], stats["messages_ready"], stats["consumers"]) == (1, 1, 0)  # "old" stays


def test_peek_reads_a_position_through_any_node_and_moves_nothing(tmp_path) -> None:
    cluster = ProcessCluster.start(tmp_path)

    async def scenario() -> tuple[list, dict]:
        async with Client(cluster.urls, timeout=PATIENT_S) as client:
            await client.declare("peeked")
            await client.publish("peeked", ["a", "b", "c"])
            before = await client.queue("peeked")
        found = []
        for url in cluster.urls:  # the leader answers; the others pass the request on
            async with Client([url], timeout=PATIENT_S) as client:
                second, past = await client.peek("peeked", 2), await client.peek("peeked", 4)
                found.append((second.body if second else None, past))
        async with Client(cluster.urls, timeout=PATIENT_S) as client:
            after = await client.queue("peeked")
        assert (before["messages_ready"], after["messages_ready"]) == (3, 3)
        return found, after

    try:
        found, after = asyncio.run(scenario())
    finally:
        cluster.stop()
    assert found == [(b"b", None)] * 3
    assert after["messages_unacknowledged"] == 0


def test_rule_an_auto_ack_consumer_stays_auto_ack_on_a_new_leader(tmp_path) -> None:
    """An auto-ack consumer is registered through the log: the new leader hands out again what it held
    when the leader moved and settles it as it does, so nothing stays unacknowledged and its prefetch
    keeps letting the rest through."""
    cluster = ProcessCluster.start(tmp_path)

    async def scenario() -> tuple[list[str], dict]:
        async with Client(cluster.urls, timeout=PATIENT_S, stream=False) as client:
            await client.declare("no-ack")
            tag = await client.consume("no-ack", prefetch=2, auto_ack=True)
            await client.publish("no-ack", ["a", "b", "c", "d"])
            held = await client.queue("no-ack")
            assert (held["messages_unacknowledged"], held["messages_ready"]) == (2, 2), held
            [listed] = await client.consumers("no-ack")
            assert (listed["tag"], listed["auto_ack"], listed["unacknowledged"]) == (tag[:8] + "...", True, 2)
            await _move_leader(client, "no-ack")
            bodies: list[str] = []
            deadline = time.monotonic() + PATIENT_S
            while len(bodies) < 4 and time.monotonic() < deadline:
                bodies += [m.body.decode() for m in await client.deliveries("no-ack", tag, max=10, wait=1.0)]
            return bodies, await client.queue("no-ack")

    try:
        every_node_writes_the_newest_queue_ops(cluster)
        bodies, stats = asyncio.run(scenario())
    finally:
        cluster.stop()
    assert bodies == ["a", "b", "c", "d"]
    assert (stats["messages"], stats["messages_unacknowledged"]) == (0, 0)
