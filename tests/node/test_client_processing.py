"""Consuming with `message.process()` and publishing through publisher context managers, on a real node:
a block that ends acks its message, one that raises nacks it and re-raises (requeued by default,
dead-lettered with requeue=False); leaving a publisher's block flushes it, sync and async alike."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from cli.node_processes import ProcessCluster
from quorumq import Client, IncomingMessage, SyncClient


class Failed(Exception):
    """What the work on a message raises in these tests."""


async def _work(message: IncomingMessage) -> None:
    """`ok` succeeds; `flaky` fails on its first delivery only; `poison` always fails."""
    if message.body == b"poison" or (message.body == b"flaky" and not message.redelivered):
        raise Failed(message.text)


async def test_process_acks_on_success_and_nacks_and_reraises_on_failure(one_node: ProcessCluster) -> None:
    async with Client(one_node.urls) as client:
        await client.declare("dead")
        await client.declare("work", {"x-dead-letter-queue": "dead"})
        async with client.publisher("work") as publisher:
            confirms = [await publisher.send(body) for body in ("ok", "flaky", "poison")]
        assert all(confirm.done() for confirm in confirms)  # leaving the block flushed them

        outcomes: list[tuple[str, str]] = []
        async with (
            client.subscribe("work", prefetch=1, wait=1.0) as sub,
            contextlib.aclosing(aiter(sub)) as stream,
        ):
            async for message in stream:
                try:
                    async with message.process(requeue=message.body != b"poison") as processed:
                        assert processed is message
                        await _work(message)
                    outcomes.append((message.text, "acked"))
                except Failed:
                    outcomes.append((message.text, "nacked"))
                if len(outcomes) == 4:
                    break
        assert sorted(outcomes) == [
            ("flaky", "acked"),
            ("flaky", "nacked"),
            ("ok", "acked"),
            ("poison", "nacked"),
        ]
        assert (await client.queue("work"))["messages"] == 0
        [dead] = await client.get("dead", ack="auto")
        assert (dead.body, dead.headers["x-first-death-reason"]) == (b"poison", "rejected")


async def test_a_message_settled_inside_process_is_not_settled_again(one_node: ProcessCluster) -> None:
    async with Client(one_node.urls) as client:
        await client.declare("once")
        await client.publish("once", ["first", "second"])
        [first, second] = await client.get("once", count=2)
        async with first.process():
            await first.nack()  # back to the queue; process() leaves it so
        with pytest.raises(RuntimeError, match="already settled"):
            await first.ack()
        async with second.process():
            pass
        assert second.settled
        [again] = await client.get("once", ack="auto")
        assert (again.body, again.redelivered) == (b"first", True)


def test_sync_publisher_flushes_on_exit_and_aborts_on_an_exception(one_node: ProcessCluster) -> None:
    with SyncClient(one_node.urls) as client:
        client.declare("sync-pub")
        with client.publisher("sync-pub", batch=10) as publisher:
            confirms = [publisher.send(str(number)) for number in range(25)]
        ids = [confirm.result(timeout=0) for confirm in confirms]  # already confirmed: the exit flushed
        assert len(set(ids)) == 25
        assert client.queue("sync-pub")["messages"] == 25
        with pytest.raises(RuntimeError, match="closed"):
            publisher.send("too late")

        with pytest.raises(Failed), client.publisher("sync-pub") as publisher:
            publisher.send("maybe")
            raise Failed("the caller's error leaves the block")


async def test_a_failed_nack_leaves_the_blocks_exception_with_a_note(
    one_node: ProcessCluster,
) -> None:
    async with Client(one_node.urls) as client:
        await client.declare("gone")
        await client.publish("gone", "lost with its node")
        [message] = await client.get("gone")
        with pytest.raises(Failed) as raised:
            async with message.process():
                one_node.nodes[0].kill()  # the nack that follows finds no node
                raise Failed("the work failed")
    assert any(f"nacking message {message.id} failed" in note for note in raised.value.__notes__)
    assert not message.settled


async def test_a_cancelled_or_interrupted_block_requeues_even_with_requeue_false(
    one_node: ProcessCluster,
) -> None:
    """A worker shutting down (its task cancelled, Ctrl-C, sys.exit) did not reject the message: it goes
    back to the queue as a plain return (not a failed delivery) instead of being dead-lettered, and the
    interruption goes on up."""
    async with Client(one_node.urls) as client:
        await client.declare("stopped-dead")
        await client.declare("stopped", {"x-dead-letter-queue": "stopped-dead"})
        await client.publish("stopped", ["cancelled", "interrupted", "exited"])
        [cancelled, interrupted, exited] = await client.get("stopped", count=3)

        started = asyncio.Event()

        async def work_until_cancelled() -> None:
            async with cancelled.process(requeue=False):
                started.set()
                await asyncio.Event().wait()

        worker = asyncio.create_task(work_until_cancelled())
        await started.wait()
        worker.cancel()
        with pytest.raises(asyncio.CancelledError):
            await worker
        with pytest.raises(KeyboardInterrupt):
            async with interrupted.process(requeue=False):
                raise KeyboardInterrupt
        with pytest.raises(SystemExit):
            async with exited.process(requeue=False):
                raise SystemExit(0)

        assert cancelled.settled and interrupted.settled and exited.settled
        assert (await client.queue("stopped-dead"))["messages"] == 0
        again = await client.get("stopped", count=3, ack="auto")
        assert sorted((m.body, m.redelivered, m.delivery_count, m.acquired_count) for m in again) == [
            (b"cancelled", True, 0, 1),
            (b"exited", True, 0, 1),
            (b"interrupted", True, 0, 1),
        ]
