"""A client that sends its last acks and `connection.close` in one go, without closing its channels
first (as RabbitMQ's Java client does): the acks are served before the connection ends, as RabbitMQ
serves them, rather than the messages they settle being returned. Spoken frame by frame with pamqp, so
the acks and the close leave in one write."""

from __future__ import annotations

import pika
import pytest
from pamqp import commands
from pamqp.header import ContentHeader
from raw_client import RawClient

from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER

pytestmark = pytest.mark.process

COUNT = 50


def test_acks_sent_with_the_connection_close_are_served_before_it_ends(amqp_port: int) -> None:
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    setup = pika.BlockingConnection(
        pika.ConnectionParameters("127.0.0.1", amqp_port, credentials=credentials)
    )
    channel = setup.channel()
    channel.queue_declare("closing", durable=True)
    channel.confirm_delivery()
    for i in range(COUNT):
        channel.basic_publish("", "closing", f"m{i}".encode())

    client = RawClient.opened(amqp_port)
    tags = []
    for _ in range(COUNT):
        client.send((1, commands.Basic.Get(queue="closing", no_ack=False)))
        got = client.until(commands.Basic.GetOk)
        client.until(ContentHeader)
        tags.append(got.delivery_tag)  # type: ignore[attr-defined]
    client.send(
        *[(1, commands.Basic.Ack(delivery_tag=tag)) for tag in tags],
        (0, commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)),
    )
    client.until(commands.Connection.CloseOk)
    client.sock.close()

    assert channel.queue_declare("closing", passive=True).method.message_count == 0
    setup.close()


def test_review_a_channel_close_crossing_the_servers_keeps_the_connection(amqp_port: int) -> None:
    """The client closes a channel as the server closes it for an error: each answers the other's close
    with close-ok, as the spec asks, and the connection goes on."""
    client = RawClient.opened(amqp_port)
    closing = commands.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)
    client.send((1, commands.Basic.Ack(delivery_tag=99)), (1, closing))  # an error, and our close with it
    client.until(commands.Channel.Close)  # the server's, for the unknown tag
    client.until(commands.Channel.CloseOk)  # its answer to ours
    client.send((1, commands.Channel.CloseOk()), (2, commands.Channel.Open()))
    client.until(commands.Channel.OpenOk)
    client.send((0, commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)))
    client.until(commands.Connection.CloseOk)
    client.sock.close()
