"""AMQP properties and headers ↔ a quorumq message (`api.amqp.properties`): what a publish stores, what
a delivery gives back, and what a field table's non-JSON values become."""

from __future__ import annotations

import datetime
import decimal
import struct
from dataclasses import replace

import msgpack
import pytest
from pamqp import commands

from api.amqp.delivery_frames import encoded_properties
from api.amqp.node_calls import answered_row
from api.amqp.properties import (
    delivery_properties,
    json_value,
    marshalled_delivery_properties,
    published_fields,
)
from api.amqp.reply_codes import PRECONDITION_FAILED, AmqpError
from api.deliveries import msgpack_delivery
from cluster.queues.queue_results import MessageRow
from cluster.replication.stored_message import published_route, routed_headers

STAMP = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)


def row(headers: dict[str, object], delivery_count: int = 0, priority: int = 0) -> MessageRow:
    return MessageRow(7, b"body", "base64", headers, delivery_count, delivery_count > 0, 0, priority=priority)


def test_every_property_survives_a_publish_and_a_delivery() -> None:
    sent = commands.Basic.Properties(
        content_type="application/json",
        content_encoding="gzip",
        headers={"tenant": "acme", "attempt": 2},
        delivery_mode=2,
        priority=4,
        correlation_id="c-1",
        reply_to="replies",
        expiration="60000",
        message_id="m-1",
        timestamp=STAMP,
        message_type="order.created",
        user_id="alice",
        app_id="shop",
    )
    fields = published_fields(sent, b"\x00{}")
    assert fields["body"] == b"\x00{}"
    assert (fields["priority"], fields["expiration"]) == (4, 60000)
    assert fields["headers"] == {
        "tenant": "acme",
        "attempt": 2,
        "x-amqp-content-type": "application/json",
        "x-amqp-content-encoding": "gzip",
        "x-amqp-delivery-mode": 2,
        "x-amqp-correlation-id": "c-1",
        "x-amqp-reply-to": "replies",
        "x-amqp-message-id": "m-1",
        "x-amqp-timestamp": int(STAMP.timestamp()),
        "x-amqp-type": "order.created",
        "x-amqp-user-id": "alice",
        "x-amqp-app-id": "shop",
    }
    got = delivery_properties(row(fields["headers"], priority=4))
    for name in (
        "content_type",
        "content_encoding",
        "delivery_mode",
        "priority",
        "correlation_id",
        "reply_to",
        "message_id",
        "timestamp",
        "message_type",
        "user_id",
        "app_id",
    ):
        assert getattr(got, name) == getattr(sent, name), name
    assert got.headers == {"tenant": "acme", "attempt": 2}
    assert got.expiration is None  # a delivered message's expiration is not told back, as RabbitMQ


def test_a_redelivery_after_a_failed_delivery_carries_x_delivery_count() -> None:
    assert delivery_properties(row({})).headers is None
    assert delivery_properties(row({}, delivery_count=2)).headers == {"x-delivery-count": 2}


def test_a_property_header_of_the_wrong_type_set_over_http_is_left_out() -> None:
    got = delivery_properties(
        row({"x-amqp-timestamp": "yesterday", "x-amqp-delivery-mode": 7, "x-amqp-app-id": 5})
    )
    assert (got.timestamp, got.delivery_mode, got.app_id) == (None, None, None)


def test_the_exchange_and_routing_key_a_message_was_routed_by_go_to_the_method_not_the_headers() -> None:
    routed = routed_headers({"tenant": "acme"}, "events", "order.17.eu")
    assert routed == {"tenant": "acme", "x-amqp-exchange": "events", "x-amqp-routing-key": "order.17.eu"}
    assert published_route(routed, "eu-orders") == ("events", "order.17.eu")
    assert delivery_properties(row(routed)).headers == {"tenant": "acme"}
    by_name = routed_headers(routed, "", "dlq")  # the default exchange routes by the queue's name
    assert by_name == {"tenant": "acme"} and published_route(by_name, "dlq") == ("", "dlq")


@pytest.mark.parametrize(
    "headers",
    [
        {"x-amqp-exchange": "events"},
        {"x-amqp-exchange": "", "x-amqp-routing-key": "k"},
        {"x-amqp-exchange": 5, "x-amqp-routing-key": "k"},
        {"x-amqp-exchange": "events", "x-amqp-routing-key": "k" * 256},
    ],
)
def test_route_headers_set_over_http_that_amqp_cannot_carry_read_as_the_queue_s_own(
    headers: dict[str, object],
) -> None:
    assert published_route(headers, "jobs") == ("", "jobs")


@pytest.mark.parametrize("expiration", ["-1", "1.5", "soon", "\uff11\uff12"])  # the last: fullwidth digits
def test_an_expiration_that_is_not_a_count_of_ms_closes_the_channel(expiration: str) -> None:
    with pytest.raises(AmqpError) as refused:
        published_fields(commands.Basic.Properties(expiration=expiration), b"")
    assert (refused.value.code, refused.value.connection) == (PRECONDITION_FAILED, False)


def test_field_table_values_become_json_values() -> None:
    assert json_value({"a": [b"text", b"\xff\x00", decimal.Decimal("1.50"), STAMP, None, True, 1.5]}) == {
        "a": ["text", "/wA=", "1.50", int(STAMP.timestamp()), None, True, 1.5]
    }


def test_a_group_travels_as_the_header_x_group_id_both_ways() -> None:
    """An AMQP publisher names a message's group by the header `x-group-id`, which the publish keeps
    (`api/publish_job.py` takes it as the group) and a delivery gives back in its headers table."""
    published = published_fields(commands.Basic.Properties(headers={"x-group-id": "order-7"}), b"x")
    assert published["headers"] == {"x-group-id": "order-7"}
    assert delivery_properties(row({"x-group-id": "order-7"})).headers == {"x-group-id": "order-7"}


def test_a_float_header_is_written_as_a_double_and_a_huge_integer_as_its_text() -> None:
    """pamqp writes floats as 32-bit floats, which hold neither 19.99 nor 1e300: headers are written as
    doubles ('d'), as RabbitMQ relays a double; an integer beyond 64 bits (set over HTTP) is delivered as
    its text instead of failing the delivery (and the consumer)."""
    headers = {"huge": 1e300, "nested": {"tiny": -1e300, "list": [19.99]}, "fine": 0.5, "big": 2**70}
    got = delivery_properties(row(headers))
    assert got.headers == {**headers, "big": str(2**70)}
    marshalled = marshalled_delivery_properties(row(headers))
    assert b"d" + struct.pack(">d", 19.99) in marshalled
    read_back = commands.Basic.Properties()
    read_back.unmarshal(struct.unpack_from(">H", marshalled)[0], marshalled[2:])
    assert read_back.headers == got.headers


def test_a_redelivery_carries_x_acquired_count_whether_polled_at_the_door_or_over_http() -> None:
    """A consumer on the queue's leader gets rows from the queue's door; on another node, rows read back
    from the HTTP answer (whose headers hold the counts): both deliver the same AMQP headers."""
    at_the_door = MessageRow(7, b"m", "base64", {"k": "v"}, 1, True, 0, acquired_count=2)
    over_http = answered_row(msgpack.unpackb(msgpack_delivery(at_the_door)))
    assert delivery_properties(at_the_door).headers == {
        "k": "v",
        "x-acquired-count": 2,
        "x-delivery-count": 1,
    }
    assert delivery_properties(over_http).headers == delivery_properties(at_the_door).headers
    assert encoded_properties(at_the_door) == delivery_properties(at_the_door).marshal()
    assert encoded_properties(replace(at_the_door, acquired_count=3)) != encoded_properties(at_the_door)
