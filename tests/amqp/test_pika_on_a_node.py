"""RabbitMQ's Python client, pika, against a real node's AMQP listener: what a quorum-queue application
does (declare, publish with confirms, get, consume with a prefetch, ack, nack, reject), and RabbitMQ's
refusals where quorumq, like RabbitMQ's quorum queues, has none to give."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pika
import pika.exceptions
import pytest

from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster, free_ports

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def amqp_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One node serving AMQP on a free port, for the whole module (each test uses queues of its own)."""
    port = free_ports(1)[0]
    cluster = ProcessCluster.start(
        tmp_path_factory.mktemp("amqp"), count=1, extra_args=[f"--amqp=127.0.0.1:{port}"]
    )
    try:
        yield port
    finally:
        cluster.stop()


@pytest.fixture
def channel(amqp_port: int) -> Iterator[pika.adapters.blocking_connection.BlockingChannel]:
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    parameters = pika.ConnectionParameters("127.0.0.1", amqp_port, credentials=credentials)
    connection = pika.BlockingConnection(parameters)
    try:
        yield connection.channel()
    finally:
        if connection.is_open:
            connection.close()


def declare(channel: pika.adapters.blocking_connection.BlockingChannel, queue: str) -> None:
    channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})


def test_a_confirmed_publish_is_got_with_its_properties_and_acked(channel) -> None:  # type: ignore[no-untyped-def]
    declare(channel, "got")
    channel.confirm_delivery()
    properties = pika.BasicProperties(
        content_type="application/json", correlation_id="c-1", message_id="m-1", headers={"tenant": "acme"}
    )
    channel.basic_publish("", "got", b'{"order": 1}', properties, mandatory=True)
    method, got, body = channel.basic_get("got", auto_ack=False)
    assert body == b'{"order": 1}'
    assert (got.content_type, got.correlation_id, got.message_id) == ("application/json", "c-1", "m-1")
    assert got.headers == {"tenant": "acme"}
    assert not method.redelivered
    channel.basic_ack(method.delivery_tag)
    assert channel.basic_get("got", auto_ack=False) == (None, None, None)
    assert channel.queue_declare("got", passive=True).method.message_count == 0


def test_a_consumer_gets_a_nacked_message_again_with_its_delivery_count(channel) -> None:  # type: ignore[no-untyped-def]
    declare(channel, "consumed")
    channel.confirm_delivery()
    for i in range(3):
        channel.basic_publish("", "consumed", f"m{i}".encode())
    channel.basic_qos(prefetch_count=2)
    seen = []
    for method, properties, body in channel.consume("consumed", inactivity_timeout=10):
        assert method is not None, seen
        seen.append((body, method.redelivered, (properties.headers or {}).get("x-delivery-count")))
        if body == b"m0" and not method.redelivered:
            channel.basic_nack(method.delivery_tag, requeue=True)
        else:
            channel.basic_ack(method.delivery_tag)
        if len(seen) == 4:
            break
    channel.cancel()
    assert sorted(seen) == [(b"m0", False, None), (b"m0", True, 1), (b"m1", False, None), (b"m2", False, None)]


def test_quorum_queues_refuse_what_rabbitmq_refuses_for_them(channel) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        channel.queue_declare("excl", durable=True, exclusive=True)
    assert refused.value.reply_code == 406 and "exclusive" in refused.value.reply_text


def test_a_passive_declare_of_no_queue_is_not_found(channel) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        channel.queue_declare("never-declared", passive=True)
    assert refused.value.reply_code == 404


def test_a_wrong_password_is_refused(amqp_port: int) -> None:
    parameters = pika.ConnectionParameters(
        "127.0.0.1", amqp_port, credentials=pika.PlainCredentials(HARNESS_USER, "wrong")
    )
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(parameters)
