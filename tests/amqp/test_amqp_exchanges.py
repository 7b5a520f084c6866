"""Exchanges and bindings over AMQP with pika and aio-pika, against a real node (issues 41 and 42): fanout,
topic, headers, exchange-to-exchange and alternate-exchange routes confirmed once every queue committed
its copy; `mandatory` messages that reach no queue returned before their confirm; and RabbitMQ's
refusals (an inequivalent redeclare, a missing exchange, reserved names, a delete while in use, an
internal exchange)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import aio_pika
import pika
import pika.exceptions
import pytest
import requests
from pika.adapters.blocking_connection import BlockingChannel
from support.eventually import eventually_sync

from cli.node_processes import HARNESS_HEADERS, HARNESS_PASSWORD, HARNESS_USER, NodeProcess

pytestmark = pytest.mark.process


def connect(port: int) -> pika.BlockingConnection:
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port, credentials=credentials))


@pytest.fixture
def connection(amqp_port: int) -> Iterator[pika.BlockingConnection]:
    opened = connect(amqp_port)
    try:
        yield opened
    finally:
        if opened.is_open:
            opened.close()


@pytest.fixture
def channel(connection: pika.BlockingConnection) -> BlockingChannel:
    """A channel in confirm mode."""
    opened = connection.channel()
    opened.confirm_delivery()
    return opened


def queues(channel: BlockingChannel, *names: str) -> None:
    for name in names:
        channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum"})


def drained(channel: BlockingChannel, queue: str) -> list[bytes]:
    """Every ready message of `queue`, taken."""
    bodies: list[bytes] = []
    while True:
        _, _, body = channel.basic_get(queue, auto_ack=True)
        if body is None:
            return bodies
        bodies.append(body)


def refusal(connection: pika.BlockingConnection, action: Any) -> int:
    """The reply code of the channel error `action(channel)` meets, on a channel of its own."""
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        action(connection.channel())
    return refused.value.reply_code


def test_a_fanout_publish_is_confirmed_once_both_bound_queues_have_it(channel: BlockingChannel) -> None:
    queues(channel, "fan-a", "fan-b")
    channel.exchange_declare("fan", "fanout", durable=True)
    channel.exchange_declare("fan", "fanout", durable=True)  # the same again: fine
    for queue in ("fan-a", "fan-b"):
        channel.queue_bind(queue, "fan")
    for i in range(5):
        channel.basic_publish("fan", "any key", f"m{i}".encode(), mandatory=True)
    expected = [f"m{i}".encode() for i in range(5)]
    assert drained(channel, "fan-a") == expected
    assert drained(channel, "fan-b") == expected


def test_topic_bindings_match_one_word_with_star_and_any_words_with_hash(channel: BlockingChannel) -> None:
    queues(channel, "topic-star", "topic-hash")
    channel.exchange_declare("topics", "topic")
    channel.queue_bind("topic-star", "topics", "orders.*")
    channel.queue_bind("topic-hash", "topics", "orders.#")
    for key in ("orders.eu", "orders.eu.paris", "orders", "invoices.eu"):
        channel.basic_publish("topics", key, key.encode())
    assert drained(channel, "topic-star") == [b"orders.eu"]
    assert drained(channel, "topic-hash") == [b"orders.eu", b"orders.eu.paris", b"orders"]


def test_a_delivery_names_the_exchange_and_routing_key_its_message_was_published_with(
    channel: BlockingChannel,
) -> None:
    queues(channel, "routed-by")
    channel.exchange_declare("routes", "topic")
    channel.queue_bind("routed-by", "routes", "order.#")
    channel.basic_publish("routes", "order.17.eu", b"o", pika.BasicProperties(headers={"tenant": "acme"}))
    channel.basic_publish("", "routed-by", b"direct")
    got, properties, _ = channel.basic_get("routed-by", auto_ack=True)
    assert (got.exchange, got.routing_key, properties.headers) == (
        "routes",
        "order.17.eu",
        {"tenant": "acme"},
    )
    for delivered, _, body in channel.consume("routed-by", auto_ack=True, inactivity_timeout=30):
        assert (delivered.exchange, delivered.routing_key, body) == ("", "routed-by", b"direct")
        break
    channel.cancel()


def test_a_dead_letter_exchange_routes_rejected_messages_by_their_own_or_the_queue_s_routing_key(
    channel: BlockingChannel,
) -> None:
    queues(channel, "dlx-caught")
    channel.exchange_declare("dlx-events", "topic")
    channel.exchange_declare("dlx", "topic")
    channel.queue_bind("dlx-caught", "dlx", "order.#")
    for queue, key in (("dlx-own", None), ("dlx-keyed", "order.keyed")):
        arguments = {"x-queue-type": "quorum", "x-dead-letter-exchange": "dlx"}
        if key is not None:
            arguments["x-dead-letter-routing-key"] = key
        channel.queue_declare(queue, durable=True, arguments=arguments)
        channel.queue_declare(queue, durable=True, arguments=arguments)  # the same again: fine
        channel.queue_bind(queue, "dlx-events", "order.7")
    channel.basic_publish("dlx-events", "order.7", b"poison")
    for queue in ("dlx-own", "dlx-keyed"):
        method, _, _ = channel.basic_get(queue, auto_ack=False)
        channel.basic_reject(method.delivery_tag, requeue=False)
    caught = {}

    def both_caught() -> bool:
        method, properties, body = channel.basic_get("dlx-caught", auto_ack=True)
        if method is not None:
            (death,) = properties.headers["x-death"]
            caught[death["queue"]] = (method.exchange, method.routing_key, death["exchange"], body)
        return len(caught) == 2

    eventually_sync(both_caught, "both dead letters")
    assert caught == {
        "dlx-own": ("dlx", "order.7", "dlx-events", b"poison"),
        "dlx-keyed": ("dlx", "order.keyed", "dlx-events", b"poison"),
    }
    for refused in ({"x-dead-letter-exchange": "bad\nname"}, {"x-dead-letter-routing-key": "k"}):
        code = refusal(
            channel.connection,
            lambda ch, args=refused: ch.queue_declare("dlx-refused", durable=True, arguments=args),
        )
        assert code == 406


def test_headers_bindings_match_all_or_any_of_their_headers(channel: BlockingChannel) -> None:
    queues(channel, "headers-all", "headers-any")
    channel.exchange_declare("by-headers", "headers")
    tests = {"format": "pdf", "pages": 2}
    channel.queue_bind("headers-all", "by-headers", arguments={"x-match": "all", **tests})
    channel.queue_bind("headers-any", "by-headers", arguments={"x-match": "any", **tests})
    for name, headers in (("both", {"format": "pdf", "pages": 2}), ("one", {"format": "pdf"}), ("none", {})):
        channel.basic_publish("by-headers", "", name.encode(), pika.BasicProperties(headers=headers))
    channel.basic_publish("by-headers", "", b"typed", pika.BasicProperties(headers={"pages": "2"}))
    assert drained(channel, "headers-all") == [b"both"]
    assert drained(channel, "headers-any") == [b"both", b"one"]


def test_an_exchange_bound_to_an_exchange_routes_on(channel: BlockingChannel) -> None:
    queues(channel, "downstream-q")
    channel.exchange_declare("upstream", "direct")
    channel.exchange_declare("downstream", "fanout")
    channel.exchange_bind("downstream", "upstream", "k")
    channel.queue_bind("downstream-q", "downstream")
    channel.basic_publish("upstream", "k", b"through")
    channel.basic_publish("upstream", "other", b"not bound")
    assert drained(channel, "downstream-q") == [b"through"]
    channel.exchange_unbind("downstream", "upstream", "k")
    channel.basic_publish("upstream", "k", b"unbound")
    assert drained(channel, "downstream-q") == []


def test_what_an_exchange_cannot_route_goes_to_its_alternate_exchange(channel: BlockingChannel) -> None:
    queues(channel, "routed", "unrouted")
    channel.exchange_declare("caught", "fanout")
    channel.exchange_declare("main", "direct", arguments={"alternate-exchange": "caught"})
    channel.queue_bind("routed", "main", "known")
    channel.queue_bind("unrouted", "caught")
    channel.basic_publish("main", "known", b"to routed", mandatory=True)
    channel.basic_publish("main", "unknown", b"to the alternate", mandatory=True)  # routed: not returned
    assert drained(channel, "routed") == [b"to routed"]
    assert drained(channel, "unrouted") == [b"to the alternate"]


def test_a_mandatory_message_no_binding_matches_is_returned_before_its_confirm(
    channel: BlockingChannel,
) -> None:
    queues(channel, "only-blue")
    channel.exchange_declare("colours", "direct")
    channel.queue_bind("only-blue", "colours", "blue")
    properties = pika.BasicProperties(content_type="text/plain", headers={"shade": "dark"})
    with pytest.raises(pika.exceptions.UnroutableError) as returned:  # the return came before the ack
        channel.basic_publish("colours", "red", b"nobody wants red", properties, mandatory=True)
    [message] = returned.value.messages
    assert (message.method.reply_code, message.method.exchange, message.method.routing_key) == (
        312,
        "colours",
        "red",
    )
    assert message.body == b"nobody wants red"
    assert (message.properties.content_type, message.properties.headers) == ("text/plain", {"shade": "dark"})
    channel.basic_publish("colours", "red", b"dropped")  # not mandatory: dropped, confirmed
    channel.basic_publish("colours", "blue", b"kept", mandatory=True)
    assert drained(channel, "only-blue") == [b"kept"]


def test_a_return_reaches_the_on_return_callback_without_confirms(
    connection: pika.BlockingConnection,
) -> None:
    channel = connection.channel()
    channel.exchange_declare("nowhere", "fanout")
    returned: list[tuple[str, bytes]] = []
    channel.add_on_return_callback(lambda _ch, method, _p, body: returned.append((method.reply_text, body)))
    channel.basic_publish("nowhere", "", b"back to me", mandatory=True)
    while not returned:
        connection.process_data_events(time_limit=1)
    assert returned == [("NO_ROUTE", b"back to me")]


def test_unbinding_a_queue_stops_its_messages(
    channel: BlockingChannel, connection: pika.BlockingConnection
) -> None:
    queues(channel, "unbound-q")
    channel.exchange_declare("unbinding", "direct")
    channel.queue_bind("unbound-q", "unbinding", "k", arguments={"note": "with arguments"})
    channel.basic_publish("unbinding", "k", b"before")
    channel.queue_unbind("unbound-q", "unbinding", "k", arguments={"note": "with arguments"})
    with pytest.raises(pika.exceptions.UnroutableError):
        channel.basic_publish("unbinding", "k", b"after", mandatory=True)
    assert drained(channel, "unbound-q") == [b"before"]
    channel.queue_unbind("unbound-q", "unbinding", "k")  # no such binding: unbound already, as RabbitMQ
    assert refusal(connection, lambda ch: ch.queue_unbind("no-such-queue", "unbinding", "k")) == 404
    assert refusal(connection, lambda ch: ch.queue_bind("no-such-queue", "unbinding", "k")) == 404
    assert refusal(connection, lambda ch: ch.queue_bind("unbound-q", "no-such-exchange", "k")) == 404
    assert refusal(connection, lambda ch: ch.queue_bind("unbound-q", "", "k")) == 403


def test_declares_are_refused_as_rabbitmq_refuses_them(connection: pika.BlockingConnection) -> None:
    channel = connection.channel()
    channel.exchange_declare("redeclared", "direct")
    assert refusal(connection, lambda ch: ch.exchange_declare("redeclared", "fanout")) == 406
    assert refusal(connection, lambda ch: ch.exchange_declare("redeclared", "direct", internal=True)) == 406
    assert refusal(connection, lambda ch: ch.exchange_declare("never-declared", passive=True)) == 404
    assert refusal(connection, lambda ch: ch.exchange_declare("amq.mine", "direct")) == 403
    assert refusal(connection, lambda ch: ch.exchange_declare("amq.direct", "fanout")) == 403
    assert refusal(connection, lambda ch: ch.exchange_declare("bad-type", "x-custom")) == 406
    channel.exchange_declare("amq.direct", "direct", durable=True)  # a builtin, as it is
    channel.exchange_declare("amq.topic", passive=True)
    channel.exchange_declare("redeclared", passive=True)


def test_deletes_honour_if_unused_and_take_the_bindings(
    channel: BlockingChannel, connection: pika.BlockingConnection
) -> None:
    queues(channel, "deleted-bound")
    channel.exchange_declare("in-use", "fanout")
    channel.queue_bind("deleted-bound", "in-use")
    assert refusal(connection, lambda ch: ch.exchange_delete("in-use", if_unused=True)) == 406
    assert refusal(connection, lambda ch: ch.exchange_delete("amq.fanout")) == 403
    channel.exchange_delete("in-use")
    channel.exchange_delete("in-use")  # no such exchange: delete-ok, as RabbitMQ 3.x answers it
    assert refusal(connection, lambda ch: ch.exchange_declare("in-use", passive=True)) == 404
    channel.exchange_declare("in-use", "fanout")  # declared again: the old bindings went with it
    with pytest.raises(pika.exceptions.UnroutableError):
        channel.basic_publish("in-use", "", b"to no one", mandatory=True)


def test_publishes_to_a_missing_or_internal_exchange_close_the_channel(
    connection: pika.BlockingConnection,
) -> None:
    connection.channel().exchange_declare("inside", "fanout", internal=True)

    def publish_to(exchange: str) -> Any:
        def publish(channel: BlockingChannel) -> None:
            channel.confirm_delivery()
            channel.basic_publish(exchange, "k", b"x")

        return publish

    assert refusal(connection, publish_to("no-such-exchange")) == 404
    assert refusal(connection, publish_to("inside")) == 403


def test_aio_pika_routes_by_topic_with_confirms(amqp_port: int) -> None:
    url = f"amqp://{HARNESS_USER}:{HARNESS_PASSWORD}@127.0.0.1:{amqp_port}/%2F"

    async def scenario() -> list[str]:
        async with await aio_pika.connect(url) as connection:
            channel = await connection.channel(publisher_confirms=True)
            exchange = await channel.declare_exchange("aio-topics", aio_pika.ExchangeType.TOPIC)
            queue = await channel.declare_queue("aio-eu", durable=True, arguments={"x-queue-type": "quorum"})
            await queue.bind(exchange, "*.eu")
            for key in ("orders.eu", "orders.us", "invoices.eu"):
                await exchange.publish(aio_pika.Message(key.encode()), routing_key=key)
            got: list[str] = []
            while (message := await queue.get(no_ack=True, fail=False)) is not None:
                got.append(message.body.decode())
            return got

    assert asyncio.run(asyncio.wait_for(scenario(), 60)) == ["orders.eu", "invoices.eu"]


def test_a_channels_publishes_through_exchanges_stay_in_order_in_each_queue(
    connection: pika.BlockingConnection, channel: BlockingChannel
) -> None:
    """Review finding (order): publishes through an exchange were batched per exchange and routing key,
    the batches of different keys running at once, so a channel's messages reaching one queue by two
    keys (or two exchanges) could land out of order; RabbitMQ keeps a channel's order in each queue."""
    queues(channel, "in-order")
    channel.exchange_declare("order-topic", "topic", durable=True)
    channel.exchange_declare("order-direct", "direct", durable=True)
    channel.queue_bind("in-order", "order-topic", "#")
    channel.queue_bind("in-order", "order-direct", "d")
    unconfirmed = connection.channel()  # no confirms: the publishes are pipelined
    sent = []
    for i in range(300):
        exchange, key = [("order-topic", "a.x"), ("order-topic", "b.y"), ("order-direct", "d")][i % 3]
        body = f"m{i:03d}".encode()
        unconfirmed.basic_publish(exchange, key, body)
        sent.append(body)
    got: list[bytes] = []
    deadline = time.monotonic() + 30.0
    while len(got) < len(sent) and time.monotonic() < deadline:  # pika's channels are for one thread
        got.extend(drained(channel, "in-order"))
        connection.sleep(0.05)
    assert got == sent


def test_rule_a_publisher_without_the_right_learns_nothing_of_an_exchange(
    amqp_node: NodeProcess, amqp_port: int
) -> None:
    """Review finding: a publish through an exchange nobody declared was answered NOT_FOUND before the
    publisher's right was checked; as RabbitMQ's channel (and our HTTP and stream), ACCESS_REFUSED
    comes first, so a user without the right cannot probe for exchanges' names."""
    admin = requests.Session()
    admin.headers.update(HARNESS_HEADERS)
    assert admin.put(f"{amqp_node.url}/api/users/amqp-prober", json={"password": "s3cret-prober"}).ok
    assert admin.put(f"{amqp_node.url}/api/users/amqp-prober/permissions", json={"write": "^granted$"}).ok
    credentials = pika.PlainCredentials("amqp-prober", "s3cret-prober")
    parameters = pika.ConnectionParameters("127.0.0.1", amqp_port, credentials=credentials)
    for exchange, code in (("never-declared", 403), ("granted", 404)):
        with pika.BlockingConnection(parameters) as prober:
            channel = prober.channel()
            channel.confirm_delivery()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                channel.basic_publish(exchange, "", b"x")
            assert refused.value.reply_code == code, (exchange, refused.value)
