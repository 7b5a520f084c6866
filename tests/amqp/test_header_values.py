"""Header values through a real node with py-amqp, the AMQP client under Celery and kombu, which writes a
float as a 64-bit double and reads both float types: a number comes back as the number it was, whether
it was published over AMQP or over HTTP (pika cannot be the judge: it reads either type as an integer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import amqp
import pytest
import requests

from cli.node_processes import HARNESS_HEADERS, HARNESS_PASSWORD, HARNESS_USER, NodeProcess

pytestmark = pytest.mark.process

NUMBERS = {"amount": 19.99, "nested": {"rate": 0.1, "list": [1e300, -2.5e-310]}, "whole": 3.0, "count": 7}


@pytest.fixture
def channel(amqp_port: int) -> Iterator[amqp.Channel]:
    with amqp.Connection(
        f"127.0.0.1:{amqp_port}", userid=HARNESS_USER, password=HARNESS_PASSWORD
    ) as connection:
        yield connection.channel()


def _got_headers(channel: amqp.Channel, queue: str) -> dict[str, Any]:
    message = channel.basic_get(queue, no_ack=True)
    assert message is not None
    return dict(message.headers)


def test_rule_a_float_header_is_delivered_as_the_double_it_was_published_as(channel: amqp.Channel) -> None:
    """Deliveries wrote floats in 32 bits (pamqp's choice): 19.99 came back as 19.989999771118164, and a
    number beyond that type's range as its text."""
    channel.queue_declare("doubles", durable=True, auto_delete=False, arguments={"x-queue-type": "quorum"})
    channel.confirm_select()
    channel.basic_publish(amqp.Message(b"priced", application_headers=NUMBERS), routing_key="doubles")
    got = _got_headers(channel, "doubles")
    assert got == NUMBERS
    assert isinstance(got["whole"], float)


def test_rule_a_json_number_published_over_http_is_delivered_as_that_double(
    amqp_node: NodeProcess, channel: amqp.Channel
) -> None:
    session = requests.Session()
    session.headers.update(HARNESS_HEADERS)
    assert session.put(f"{amqp_node.url}/api/queues/http-doubles", json={}).status_code == 201
    message = {"body": "priced", "headers": NUMBERS}
    published = session.post(
        f"{amqp_node.url}/api/queues/http-doubles/messages", json={"messages": [message]}
    )
    assert published.status_code == 201, published.text
    assert _got_headers(channel, "http-doubles") == NUMBERS
