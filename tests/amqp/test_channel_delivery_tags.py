"""A channel's delivery tags, given as deliveries are written (a poll's deliveries go out in several
writes): two consumers of one channel, one of them held in the middle of a poll's writes by a client
that reads nothing, and the tags still reach the client in order.

The connection and the node are stand-ins here (a wire that records what the channel writes and can
hold a write, a node that answers polls from lists): what is under test is only the channel's order of
tags and writes, which a real client cannot pace finely enough to catch (the kernel takes tens of
megabytes of a loopback connection before a write waits)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import cast

from pamqp import commands, frame
from pamqp.frame import FrameTypes

from api.amqp.byte_budget import ByteBudget
from api.amqp.channel import DELIVERY_WRITE_BYTES, Channel
from api.amqp.frame_io import encode_frame
from api.amqp.node_calls import NodeCalls
from api.amqp.reply_codes import AmqpError
from cluster.queues.queue_results import MessageRow

BIG = DELIVERY_WRITE_BYTES  # one delivery per write


class HoldingWire:
    """Records every delivery tag in write order; holds the writer of `held_queue`'s second write."""

    frame_max = 131072

    def __init__(self) -> None:
        self.tags: list[int] = []
        self.written = asyncio.Condition()
        self.held = asyncio.Event()  # set once a write is being held
        self.release = asyncio.Event()
        self._big_writes = 0

    async def send(self, channel: int, frames: Iterable[FrameTypes]) -> None:
        await self.write(b"".join(encode_frame(f, channel) for f in frames))

    async def write(self, encoded: bytes) -> None:
        delivers = [f for f in _frames(encoded) if isinstance(f, commands.Basic.Deliver)]
        self.tags += [d.delivery_tag for d in delivers]  # the bytes are written here, before any wait
        async with self.written:
            self.written.notify_all()
        if delivers and delivers[0].consumer_tag == "big":
            self._big_writes += 1
            if self._big_writes == 1:
                self.held.set()
                await self.release.wait()  # the client is behind: drain waits

    async def wait_for_tags(self, count: int) -> None:
        async with self.written:
            await self.written.wait_for(lambda: len(self.tags) >= count)

    async def refuse(self, channel: int, error: AmqpError) -> None:
        raise AssertionError(error)

    def publishing(self) -> None:
        pass


def _frames(encoded: bytes) -> list[FrameTypes]:
    """The frames in `encoded`, decoded by pamqp one after another."""
    frames = []
    while encoded:
        used, _, decoded = frame.unmarshal(encoded)
        frames.append(decoded)
        encoded = encoded[used:]
    return frames


class ListNode:
    """Answers each consumer's first poll with its rows, later ones never (a long-poll of an empty queue)."""

    def __init__(self, rows: dict[str, list[MessageRow]]) -> None:
        self._rows = rows
        self.polled: dict[str, asyncio.Event] = {queue: asyncio.Event() for queue in rows}

    async def register(self, queue: str, prefetch: int, priority: int, auto_ack: bool) -> str:
        return f"quorumq-{queue}"

    async def poll(self, queue: str, consumer: str, most: int, auto_ack: bool) -> list[MessageRow]:
        if self.polled[queue].is_set():
            await asyncio.Event().wait()
        self.polled[queue].set()
        return self._rows[queue]

    async def settle(
        self, queue: str, consumer: str | None, ids: list[int], ack: bool, requeue: bool
    ) -> None:
        pass

    async def cancel(self, queue: str, consumer: str) -> None:
        pass


def row(id_: int, size: int) -> MessageRow:
    return MessageRow(id_, b"x" * size, "binary", {}, 0, False, 0)


async def consume(channel: Channel, queue: str) -> None:
    await channel.method(commands.Basic.Consume(queue=queue, consumer_tag=queue))


async def test_a_consumer_waiting_on_its_write_leaves_later_tags_to_what_is_written_first() -> None:
    wire = HoldingWire()
    node = ListNode({"big": [row(i, BIG) for i in range(1, 5)], "small": [row(9, 10)]})
    channel = Channel(1, wire, cast(NodeCalls, node), 1 << 20, ByteBudget())
    await consume(channel, "big")
    await wire.held.wait()  # the first big delivery is out; the writer waits on the client
    await consume(channel, "small")
    await wire.wait_for_tags(2)  # the small delivery is written while the big poll waits
    wire.release.set()
    await wire.wait_for_tags(5)
    assert wire.tags == [1, 2, 3, 4, 5]
    await channel.close()
