"""AMQP clients against a 3-node cluster through every node, the queue's leader or not: what a
publisher confirms through one node, a consumer on another receives, and aio-pika (the asyncio client
FastStream and others build on) works as pika does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import aio_pika
import pika
import pytest
from amqp_nodes import amqp_cluster

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def amqp_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The AMQP URL of each of three nodes."""
    with amqp_cluster(tmp_path_factory.mktemp("amqp3")) as cluster:
        yield [f"{url}/%2F" for url in cluster.amqp_urls]


def test_what_one_node_confirms_a_consumer_on_another_receives(amqp_urls: list[str]) -> None:
    publisher = pika.BlockingConnection(pika.URLParameters(amqp_urls[0]))
    consumer = pika.BlockingConnection(pika.URLParameters(amqp_urls[2]))
    try:
        channel = publisher.channel()
        channel.queue_declare("across", durable=True, arguments={"x-queue-type": "quorum"})
        channel.confirm_delivery()
        for i in range(20):
            channel.basic_publish("", "across", f"m{i}".encode())
        reading = consumer.channel()
        reading.basic_qos(prefetch_count=5)
        got: list[bytes] = []
        for method, _, body in reading.consume("across", inactivity_timeout=15):
            assert method is not None, got
            got.append(body)
            reading.basic_ack(method.delivery_tag)
            if len(got) == 20:
                break
        reading.cancel()
        assert got == [f"m{i}".encode() for i in range(20)]
    finally:
        publisher.close()
        consumer.close()


def test_aio_pika_publishes_with_confirms_and_consumes_through_any_node(amqp_urls: list[str]) -> None:
    async def scenario() -> list[bytes]:
        async with await aio_pika.connect(amqp_urls[1]) as publishing:
            channel = await publishing.channel(publisher_confirms=True)
            await channel.declare_queue("aio", durable=True, arguments={"x-queue-type": "quorum"})
            for i in range(10):
                await channel.default_exchange.publish(aio_pika.Message(f"a{i}".encode()), routing_key="aio")
        got: list[bytes] = []
        async with await aio_pika.connect(amqp_urls[0]) as consuming:
            channel = await consuming.channel()
            await channel.set_qos(prefetch_count=4)
            queue = await channel.declare_queue("aio", passive=True)
            async with queue.iterator() as messages:
                async for message in messages:
                    async with message.process():
                        got.append(message.body)
                    if len(got) == 10:
                        break
        return got

    assert asyncio.run(asyncio.wait_for(scenario(), 60)) == [f"a{i}".encode() for i in range(10)]


def test_a_binding_routes_the_next_publish_of_its_connection_on_every_node(amqp_urls: list[str]) -> None:
    """The connection waits until its node applied its own routing changes (made on the metadata leader)
    before it routes: a publish right after a bind is never unroutable, whichever node serves it."""
    for node, url in enumerate(amqp_urls):
        connection = pika.BlockingConnection(pika.URLParameters(url))
        try:
            channel = connection.channel()
            channel.queue_declare(f"bound-{node}", durable=True, arguments={"x-queue-type": "quorum"})
            channel.confirm_delivery()
            for round in range(10):
                exchange = f"fresh-{node}-{round}"
                channel.exchange_declare(exchange, "direct")
                channel.queue_bind(f"bound-{node}", exchange, "k")
                channel.basic_publish(exchange, "k", b"routed", mandatory=True)  # UnroutableError if missed
            assert channel.queue_declare(f"bound-{node}", passive=True).method.message_count == 10
        finally:
            connection.close()
