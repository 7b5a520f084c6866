"""Clients across fork(): a SyncClient made before a fork works in the child with a loop thread, a session
and a publisher id of its own, and the child leaves the parent's connections alone; an async client used
in a forked child refuses with a clear error."""

from __future__ import annotations

import asyncio

import pytest
from forked import run_forked

from cli.node_processes import ProcessCluster
from quorumq import Client, ForkedClientError, SyncClient

QUEUE = "forked"


def _publish_and_consume_all(client: SyncClient, expected: int) -> tuple[str, list[int], list[bytes]]:
    """In the child: publish, consume until `expected` messages came, close. Bounded by the child's
    timeout in run_forked."""
    ids = client.publish(QUEUE, "from the child")
    tag = client.consume(QUEUE)
    bodies: list[bytes] = []
    while len(bodies) < expected:
        batch = client.deliveries(QUEUE, tag, wait=1.0)
        client.ack(QUEUE, tag, [delivery.id for delivery in batch])
        bodies += [delivery.body for delivery in batch]
    client.cancel(QUEUE, tag)
    publisher_id = client.publisher_id
    client.close()
    return publisher_id, ids, bodies


def test_a_forked_child_uses_the_parents_sync_client_and_the_parent_still_works(
    one_node: ProcessCluster,
) -> None:
    with SyncClient(one_node.urls, timeout=5.0) as client:
        client.declare(QUEUE)
        parent_ids = client.publish(QUEUE, "from the parent")  # the parent's loop runs, a connection is open

        child_publisher, child_ids, bodies = run_forked(lambda: _publish_and_consume_all(client, 2))

        assert child_publisher != client.publisher_id
        assert child_ids != parent_ids
        assert sorted(bodies) == [b"from the child", b"from the parent"]
        # consume is never retried: it fails if the child closed or unregistered the parent's connection
        tag = client.consume(QUEUE)
        assert client.publish(QUEUE, "after the child") == [child_ids[0] + 1]
        assert [delivery.body for delivery in client.deliveries(QUEUE, tag, wait=5.0)] == [b"after the child"]


def test_an_async_client_used_in_a_forked_child_refuses_and_the_parent_keeps_it(
    one_node: ProcessCluster,
) -> None:
    loop = asyncio.new_event_loop()
    client = Client(one_node.urls, timeout=5.0)
    try:
        loop.run_until_complete(client.declare(QUEUE))

        def use_in_child() -> str:
            with pytest.raises(ForkedClientError) as refused:
                asyncio.run(client.queues())
            asyncio.run(client.close())  # closing it in the child leaves the parent's session alone
            return str(refused.value)

        assert "fork" in run_forked(use_in_child)
        assert loop.run_until_complete(client.consume(QUEUE))
    finally:
        loop.run_until_complete(client.close())
        loop.close()


def test_a_sync_publisher_made_before_a_fork_refuses_in_the_child_and_the_parent_keeps_it(
    one_node: ProcessCluster,
) -> None:
    """The publisher runs on the parent's loop thread, which the child does not have: the child is
    refused at once instead of waiting out call_timeout (90 s here, past run_forked's limit)."""
    with SyncClient(one_node.urls, timeout=5.0) as client:
        client.declare(QUEUE)
        with client.publisher(QUEUE) as publisher:
            first = publisher.send("from the parent")
            publisher.flush()

            def use_in_child() -> list[str]:
                refusals = []
                for use in (lambda: publisher.send("from the child"), publisher.flush, publisher.close):
                    with pytest.raises(ForkedClientError) as refused:
                        use()
                    refusals.append(str(refused.value))
                return refusals

            refusals = run_forked(use_in_child, timeout=20.0)
            assert all("fork" in refusal for refusal in refusals)
            second = publisher.send("after the child")
        assert second.result(timeout=0) == first.result(timeout=0) + 1
