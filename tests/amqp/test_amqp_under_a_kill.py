"""A fault under AMQP load: a publisher with confirms through one node while the queue's leader, another
node, is killed with SIGKILL and started again. Every message the broker confirmed is consumed
afterwards; publishes the broker could not confirm were nacked, never confirmed and lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pika
import pika.exceptions
import pytest
from amqp_nodes import amqp_cluster

from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster, wait_healthy
from quorumq import SyncClient

pytestmark = [pytest.mark.process, pytest.mark.faults]

QUEUE = "killed-leader"


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    with amqp_cluster(tmp_path_factory.mktemp("amqp-kill")) as nodes:
        yield nodes


def connect(host: str, port: int) -> pika.BlockingConnection:
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    return pika.BlockingConnection(pika.ConnectionParameters(host, port, credentials=credentials))


def test_every_confirmed_message_survives_the_leader_killed_under_an_amqp_publisher(
    cluster: ProcessCluster,
) -> None:
    with SyncClient(cluster.urls) as client:
        client.declare(QUEUE, {"x-quorum-initial-group-size": 3})
        leader = cluster.node(client.queue(QUEUE)["leader"])
    entry = next(node for node in cluster.nodes if node is not leader)
    assert entry.amqp_port is not None
    confirmed: list[bytes] = []
    stop = threading.Event()

    def publish() -> None:
        connection = connect(entry.host, entry.amqp_port or 0)
        channel = connection.channel()
        channel.confirm_delivery()
        sequence = 0
        while not stop.is_set():
            body = f"m{sequence}".encode()
            sequence += 1
            try:
                channel.basic_publish("", QUEUE, body)
            except pika.exceptions.NackError:
                continue  # refused for certain or not answered in time: not confirmed
            confirmed.append(body)
        connection.close()

    publisher = threading.Thread(target=publish)
    publisher.start()
    try:
        time.sleep(1.0)  # some confirms before the fault
        before = len(confirmed)
        leader.kill()
        time.sleep(3.0)
        leader.start()
        wait_healthy([leader])
        time.sleep(1.0)
    finally:
        stop.set()
        publisher.join(timeout=90)
    assert not publisher.is_alive()
    assert before > 0 and len(confirmed) > before, (before, len(confirmed))

    consumer = connect(entry.host, entry.amqp_port)
    try:
        channel = consumer.channel()
        got = set()
        while (message := channel.basic_get(QUEUE, auto_ack=True))[0] is not None:
            got.add(message[2])
    finally:
        consumer.close()
    assert set(confirmed) <= got, sorted(set(confirmed) - got)[:20]
