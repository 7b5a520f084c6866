"""The fault suite's AMQP links (`jepsen_tests.amqp_links`) against a real node: what each reports when
quorumq does not confirm a publish or stops a consumer, so that the workload records it truthfully."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from support.eventually import eventually

from cli.node_processes import HARNESS_HEADERS, HARNESS_PASSWORD, HARNESS_USER, NodeProcess, ProcessCluster
from jepsen_tests.amqp_links import AmqpConsumeLink, AmqpPublishLink, unknown
from quorumq import Message, QuorumqError

pytestmark = pytest.mark.process


def amqp_url(node: NodeProcess) -> str:
    return f"amqp://{HARNESS_USER}:{HARNESS_PASSWORD}@{node.host}:{node.amqp_port}"


def declare(node: NodeProcess, queue: str) -> None:
    answer = requests.put(f"{node.url}/api/queues/{queue}", json={}, headers=HARNESS_HEADERS, timeout=30)
    assert answer.status_code in (200, 201), answer.text


async def test_review_a_publish_quorumq_returns_as_unroutable_is_no_confirm(amqp_node: NodeProcess) -> None:
    """A mandatory publish to no queue is returned before its confirm: the link raises, so the workload
    records it `info`, never a confirmed enqueue the checker would then find lost."""
    async with AmqpPublishLink.opened(amqp_url(amqp_node), timeout=10.0) as link:
        with pytest.raises(QuorumqError) as raised:
            await link.send("jepsen-link-nowhere", Message("1"))
    assert raised.value.code == "returned"


def test_review_a_publish_that_timed_out_is_recorded_as_a_timeout() -> None:
    """The checker's disk-alarm rule takes `timeout` for a publish held back until its client gave up."""
    assert unknown(TimeoutError()).code == "timeout"


async def test_review_a_consumer_quorumq_cancels_breaks_its_link(amqp_node: NodeProcess) -> None:
    """quorumq ends a consumer (here: its queue deleted) with a `basic.cancel` on an open channel: the
    link is broken and says so at its next poll, rather than answering nothing for ever."""
    declare(amqp_node, "jepsen-link-deleted")
    async with AmqpConsumeLink.opened(amqp_url(amqp_node), "jepsen-link-deleted", prefetch=5) as link:
        assert await link.deliveries(max=10, wait=0.2) == []
        gone = requests.delete(f"{amqp_node.url}/api/queues/jepsen-link-deleted", headers=HARNESS_HEADERS)
        assert gone.status_code == 204, gone.text
        with pytest.raises(QuorumqError):
            for _ in range(100):  # 0.1 s each: far beyond a cancel's way back over loopback
                assert await link.deliveries(max=10, wait=0.1) == []


async def test_review_deliveries_left_in_the_inbox_are_not_handed_out_once_the_connection_is_gone(
    tmp_path: Path,
) -> None:
    """What the link had received but not handed out when its connection closed is back in the queue
    already: the next poll raises instead of handing it out (a consumer would process and 'ack' it)."""
    cluster = ProcessCluster.start(tmp_path, count=1, amqp=True)
    try:
        node = cluster.nodes[0]
        declare(node, "jepsen-link-inbox")
        async with AmqpPublishLink.opened(amqp_url(node), timeout=10.0) as publisher:
            for value in range(5):
                await publisher.send("jepsen-link-inbox", Message(str(value)))
        async with AmqpConsumeLink.opened(amqp_url(node), "jepsen-link-inbox", prefetch=5) as link:
            assert len(await link.deliveries(max=1, wait=10.0)) == 1
            node.kill()
            await eventually(lambda: link.broken, "the client to see its connection end")
            with pytest.raises(QuorumqError):
                await link.deliveries(max=10, wait=0.1)
    finally:
        cluster.stop()
