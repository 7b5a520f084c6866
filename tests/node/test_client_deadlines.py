"""Every blocking SyncClient call ends by its `call_timeout` with CallTimeoutError, also when the node it
waits on is frozen (SIGSTOP: connections are accepted, nothing answers); the same client works again once
the node is back."""

from __future__ import annotations

import signal
import time

import pytest

from cli.node_processes import ProcessCluster, wait_healthy
from quorumq import CallTimeoutError, SyncClient

CALL_TIMEOUT_S = 2.0
SLACK_S = 3.0  # a loaded machine's scheduling, not the client's timing


def test_calls_to_a_frozen_node_end_by_their_call_timeout(one_node: ProcessCluster) -> None:
    node = one_node.nodes[0]
    # A connect timeout as long as the call timeout raced it: on a loaded machine a stream handshake with
    # the frozen node gave up first, and the call ended with no_node_available instead.
    with SyncClient(one_node.urls, timeout=30.0, call_timeout=CALL_TIMEOUT_S, connect_timeout=10.0) as client:
        client.declare("frozen")
        tag = client.consume("frozen")
        node.signal(signal.SIGSTOP)
        try:
            for name, call in (
                ("deliveries", lambda: client.deliveries("frozen", tag, wait=30.0)),
                ("publish", lambda: client.publish("frozen", "while frozen")),
                ("publisher.close", lambda: client.publish_all("frozen", ["while frozen too"])),
                ("queue", lambda: client.queue("frozen")),
            ):
                began = time.monotonic()
                with pytest.raises(CallTimeoutError, match=f"{name} did not finish within 2 s"):
                    call()
                assert time.monotonic() - began < CALL_TIMEOUT_S + SLACK_S
        finally:
            node.signal(signal.SIGCONT)
        wait_healthy(one_node.nodes)
        client.cancel("frozen", tag)
        [message_id] = client.publish("frozen", "after the thaw")
        assert message_id in {delivery.id for delivery in client.get("frozen", count=3, ack="auto")}


def test_the_call_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="call_timeout"):
        SyncClient(["127.0.0.1:1"], call_timeout=0)


PUBLISHED = 4000  # one at a time: ~1 ms each at the very least


def test_a_publish_all_outlasting_the_call_timeout_succeeds_while_each_batch_is_in_time(
    one_node: ProcessCluster,
) -> None:
    """call_timeout bounds each step of a publish_all (a batch of sends, the final flush), not the whole
    call: `quorumq publish --file big` must not be cancelled half-published."""
    with SyncClient(one_node.urls, call_timeout=CALL_TIMEOUT_S) as client:
        client.declare("long")
        began = time.monotonic()
        ids = client.publish_all("long", (str(number) for number in range(PUBLISHED)), window=1, batch=1)
        took = time.monotonic() - began
        assert took > CALL_TIMEOUT_S, f"took {took:.1f} s: too quick to show anything; publish more"
        assert len(set(ids)) == PUBLISHED
        assert client.queue("long")["messages"] == PUBLISHED
