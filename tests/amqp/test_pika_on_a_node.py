"""RabbitMQ's Python client, pika, against a real node's AMQP listener: what a quorum-queue application
does (declare, publish with confirms, get, consume with a prefetch, ack, nack, reject), and RabbitMQ's
refusals where quorumq, like RabbitMQ's quorum queues, has none to give."""

from __future__ import annotations

from collections.abc import Iterator

import pika
import pika.exceptions
import pytest
import requests
from pika.adapters.blocking_connection import BlockingChannel
from support.eventually import eventually_sync

from cli.node_processes import HARNESS_HEADERS, HARNESS_PASSWORD, HARNESS_USER, NodeProcess
from quorumq import SyncClient

pytestmark = pytest.mark.process


def connect(port: int) -> pika.BlockingConnection:
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port, credentials=credentials))


@pytest.fixture
def channel(amqp_port: int) -> Iterator[BlockingChannel]:
    connection = connect(amqp_port)
    try:
        yield connection.channel()
    finally:
        if connection.is_open:
            connection.close()


def declare(channel: BlockingChannel, queue: str) -> None:
    channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})


def test_a_confirmed_publish_is_got_with_its_properties_and_acked(channel: BlockingChannel) -> None:
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


def test_a_message_id_sent_again_to_a_dedupe_queue_is_confirmed_and_enqueued_once(
    channel: BlockingChannel,
) -> None:
    """AMQP's message_id is the id a queue's deduplication window takes (docs/use/deduplication.md)."""
    channel.queue_declare(
        "deduped", durable=True, arguments={"x-queue-type": "quorum", "x-dedupe-window": 600000}
    )
    channel.confirm_delivery()
    for body in (b"first", b"again"):
        channel.basic_publish(
            "", "deduped", body, pika.BasicProperties(message_id="order-17"), mandatory=True
        )
    channel.basic_publish("", "deduped", b"other", pika.BasicProperties(message_id="order-18"))
    assert channel.queue_declare("deduped", passive=True).method.message_count == 2
    bodies = [channel.basic_get("deduped", auto_ack=True)[2] for _ in range(2)]
    assert bodies == [b"first", b"other"]


def test_a_consumer_gets_a_nacked_message_again_with_its_delivery_count(channel: BlockingChannel) -> None:
    declare(channel, "consumed")
    channel.confirm_delivery()
    for i in range(3):
        channel.basic_publish("", "consumed", f"m{i}".encode())
    channel.basic_qos(prefetch_count=2)
    seen: list[tuple[bytes, bool, int | None]] = []
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
    assert sorted(seen) == [
        (b"m0", False, None),
        (b"m0", True, 1),
        (b"m1", False, None),
        (b"m2", False, None),
    ]


def test_quorum_queues_refuse_what_rabbitmq_refuses_for_them(channel: BlockingChannel) -> None:
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        channel.queue_declare("excl", durable=True, exclusive=True)
    assert refused.value.reply_code == 406 and "exclusive" in refused.value.reply_text


def test_a_passive_declare_of_no_queue_is_not_found(channel: BlockingChannel) -> None:
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        channel.queue_declare("never-declared", passive=True)
    assert refused.value.reply_code == 404


def test_a_wrong_password_is_refused(amqp_port: int) -> None:
    parameters = pika.ConnectionParameters(
        "127.0.0.1", amqp_port, credentials=pika.PlainCredentials(HARNESS_USER, "wrong")
    )
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(parameters)


def test_a_mandatory_publish_to_no_queue_is_returned_and_confirmed(channel: BlockingChannel) -> None:
    channel.confirm_delivery()
    with pytest.raises(pika.exceptions.UnroutableError) as returned:
        channel.basic_publish("", "no-such-queue", b"lost?", mandatory=True)
    assert [m.body for m in returned.value.messages] == [b"lost?"]
    channel.basic_publish("", "no-such-queue", b"dropped")  # not mandatory: dropped, confirmed


def test_a_closed_connection_returns_what_its_consumer_held(amqp_port: int) -> None:
    first = connect(amqp_port)
    channel = first.channel()
    declare(channel, "held")
    channel.confirm_delivery()
    channel.basic_publish("", "held", b"one")
    channel.basic_qos(prefetch_count=10)
    method, _, body = next(channel.consume("held", inactivity_timeout=10))
    assert body == b"one" and not method.redelivered
    first.close()  # never acked
    second = connect(amqp_port)
    try:
        method, _, body = second.channel().basic_get("held", auto_ack=True)
        assert (body, method.redelivered) == (b"one", True)
    finally:
        second.close()


def test_guarded_deletes_purges_and_transactions_as_rabbitmq_answers_them(amqp_port: int) -> None:
    connection = connect(amqp_port)
    try:
        channel = connection.channel()
        declare(channel, "guarded")
        channel.confirm_delivery()
        channel.basic_publish("", "guarded", b"x")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            channel.queue_delete("guarded", if_empty=True)
        assert refused.value.reply_code == 406
        channel = connection.channel()
        assert channel.queue_purge("guarded").method.message_count == 1
        assert channel.queue_delete("guarded", if_empty=True).method.message_count == 0
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
            channel.tx_select()
        assert refused.value.reply_code == 540
    finally:
        connection.close()


def test_acks_sent_just_before_the_channels_close_are_served_first(amqp_port: int) -> None:
    connection = connect(amqp_port)
    channel = connection.channel()
    declare(channel, "last-acks")
    channel.confirm_delivery()
    for i in range(100):
        channel.basic_publish("", "last-acks", f"m{i}".encode())
    channel.basic_qos(prefetch_count=100)
    for count, (method, _, _) in enumerate(channel.consume("last-acks", inactivity_timeout=10), start=1):
        assert method is not None
        channel.basic_ack(method.delivery_tag)  # one at a time, none waited for
        if count == 100:
            break
    connection.close()
    check = connect(amqp_port)
    try:
        assert check.channel().queue_declare("last-acks", passive=True).method.message_count == 0
    finally:
        check.close()


def test_review_confirm_select_after_unconfirmed_publishes_still_confirms_what_follows(
    channel: BlockingChannel,
) -> None:
    declare(channel, "late-confirms")
    for i in range(50):
        channel.basic_publish("", "late-confirms", f"before{i}".encode())  # no confirms asked yet
    channel.confirm_delivery()
    channel.basic_publish("", "late-confirms", b"after")  # returns once confirmed
    assert channel.queue_declare("late-confirms", passive=True).method.message_count == 51


def test_review_one_ack_settles_a_get_and_a_consumers_delivery_of_one_queue(channel: BlockingChannel) -> None:
    declare(channel, "mixed-holders")
    channel.confirm_delivery()
    channel.basic_publish("", "mixed-holders", b"got")
    channel.basic_publish("", "mixed-holders", b"consumed")
    got, _, _ = channel.basic_get("mixed-holders", auto_ack=False)
    method, _, body = next(channel.consume("mixed-holders", inactivity_timeout=10))
    assert body == b"consumed" and method.delivery_tag > got.delivery_tag
    channel.basic_ack(method.delivery_tag, multiple=True)  # both, across a get and a consumer
    channel.cancel()
    assert channel.queue_declare("mixed-holders", passive=True).method.message_count == 0


def test_review_settling_a_cancelled_consumers_delivery_is_accepted_and_it_comes_again(
    channel: BlockingChannel,
) -> None:
    """Unlike RabbitMQ, which keeps them on the channel, a cancel returns what the consumer held (a
    consumer quorumq keeps would be handed more): an ack of one afterwards (Celery's warm shutdown
    cancels, then acks the tasks it finishes) is accepted, the channel stays open, and the message is
    delivered again."""
    declare(channel, "cancel-then-ack")
    channel.confirm_delivery()
    channel.basic_publish("", "cancel-then-ack", b"work")
    delivered: list[int] = []
    channel.basic_qos(prefetch_count=1)
    tag = channel.basic_consume(
        "cancel-then-ack", lambda _ch, method, _p, _b: delivered.append(method.delivery_tag)
    )
    while not delivered:
        channel.connection.process_data_events(time_limit=1)
    channel.basic_cancel(tag)
    channel.basic_ack(delivered[0])
    method, _, body = channel.basic_get("cancel-then-ack", auto_ack=True)
    assert (body, method.redelivered) == (b"work", True)
    assert channel.is_open


def test_review_a_user_id_other_than_the_connections_user_is_refused(channel: BlockingChannel) -> None:
    declare(channel, "user-id")
    channel.confirm_delivery()
    channel.basic_publish("", "user-id", b"mine", pika.BasicProperties(user_id=HARNESS_USER))
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        channel.basic_publish("", "user-id", b"forged", pika.BasicProperties(user_id="someone-else"))
    assert refused.value.reply_code == 406


def test_dead_lettering_through_the_default_exchange_reaches_the_queue_its_routing_key_names(
    channel: BlockingChannel,
) -> None:
    declare(channel, "orders-dlq")
    arguments = {
        "x-queue-type": "quorum",
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": "orders-dlq",
        "x-dead-letter-strategy": "at-most-once",
    }
    by_name = {
        "x-queue-type": "quorum",
        "x-dead-letter-queue": "orders-dlq",
        "x-dead-letter-strategy": "at-most-once",
    }
    channel.queue_declare("orders-dl", durable=True, arguments=by_name)
    channel.queue_declare(
        "orders-dl", durable=True, arguments=arguments
    )  # the same queue: it routes the same
    channel.confirm_delivery()
    channel.basic_publish("", "orders-dl", b"poison")
    method, _, _ = channel.basic_get("orders-dl", auto_ack=False)
    channel.basic_reject(method.delivery_tag, requeue=False)
    got = eventually_sync(lambda: channel.basic_get("orders-dlq", auto_ack=True)[2], "the dead letter")
    assert got == b"poison"


def test_review_a_consumer_acking_each_of_many_deliveries_is_never_stuck(channel: BlockingChannel) -> None:
    """With no prefetch limit, hundreds of acks wait for the channel at once: the connection reads on."""
    declare(channel, "many-acks")
    channel.confirm_delivery()
    for i in range(600):
        channel.basic_publish("", "many-acks", f"m{i}".encode())
    acked: list[bytes] = []

    def on_message(ch: BlockingChannel, method: object, _: object, body: bytes) -> None:
        ch.basic_ack(method.delivery_tag)  # type: ignore[attr-defined]
        acked.append(body)

    channel.basic_consume("many-acks", on_message)
    deadline = 60
    while len(acked) < 600 and deadline > 0:
        channel.connection.process_data_events(time_limit=1)
        deadline -= 1
    assert len(acked) == 600
    channel.cancel()
    assert eventually_sync(
        lambda: channel.queue_declare("many-acks", passive=True).method.message_count == 0, "the acks settled"
    )


def test_deliveries_of_one_poll_beyond_one_write_arrive_whole_in_order_with_their_tags(
    channel: BlockingChannel,
) -> None:
    """A consumer's deliveries go out many to a write, in writes of about DELIVERY_WRITE_BYTES of bodies:
    twelve 100 KiB bodies (several writes for one poll) arrive whole, in order, tagged 1 to 12."""
    declare(channel, "big-writes")
    channel.confirm_delivery()
    bodies = [bytes([i]) * (100 * 1024) for i in range(12)]
    for body in bodies:
        channel.basic_publish("", "big-writes", body)
    got: list[tuple[int, bytes]] = []

    def on_message(ch: BlockingChannel, method: object, _: object, body: bytes) -> None:
        got.append((method.delivery_tag, body))  # type: ignore[attr-defined]

    channel.basic_qos(prefetch_count=12)
    channel.basic_consume("big-writes", on_message)
    deadline = 60
    while len(got) < len(bodies) and deadline > 0:
        channel.connection.process_data_events(time_limit=1)
        deadline -= 1
    assert got == list(enumerate(bodies, start=1))
    channel.basic_ack(12, multiple=True)


def test_a_connection_to_a_vhost_works_in_that_vhost_only(amqp_node: NodeProcess, amqp_port: int) -> None:
    """pika's `virtual_host` names the vhost of every queue the connection declares, publishes to and
    gets from (docs/use/vhosts.md); a vhost that does not exist is refused at `connection.open`."""
    session = requests.Session()
    session.headers.update(HARNESS_HEADERS)
    assert session.put(f"{amqp_node.url}/api/vhosts/pika-tenant", json={}).status_code == 201
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    parameters = pika.ConnectionParameters(
        "127.0.0.1", amqp_port, virtual_host="pika-tenant", credentials=credentials
    )
    with pika.BlockingConnection(parameters) as connection:
        tenant = connection.channel()
        tenant.confirm_delivery()
        declare(tenant, "tenant-orders")
        tenant.basic_publish("", "tenant-orders", b"in the tenant")
        _, _, body = tenant.basic_get("tenant-orders", auto_ack=True)
        assert body == b"in the tenant"
    listed = session.get(f"{amqp_node.url}/api/queues/pika-tenant").json()
    assert [(q["vhost"], q["name"]) for q in listed] == [("pika-tenant", "tenant-orders")]
    assert session.get(f"{amqp_node.url}/api/queues/tenant-orders").status_code == 404  # not of `/`
    missing = pika.ConnectionParameters(
        "127.0.0.1", amqp_port, virtual_host="missing", credentials=credentials
    )
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError):
        pika.BlockingConnection(missing)


def test_rule_a_routing_key_naming_another_vhosts_queue_reaches_nothing(
    amqp_node: NodeProcess, channel: BlockingChannel
) -> None:
    """Review finding: a publish through the default exchange on a connection to `/` with the routing key
    `tenant/queue` was enqueued in vhost tenant's queue (AMQP qualified the key as a name of `/`); and a
    passive declare naming a vhost read its listing as a queue's stats (541). A key names a queue of the
    connection's own vhost, and a vhost's name is no queue (docs/use/vhosts.md)."""
    session = requests.Session()
    session.headers.update(HARNESS_HEADERS)
    assert session.put(f"{amqp_node.url}/api/vhosts/pika-other", json={}).status_code == 201
    assert session.put(f"{amqp_node.url}/api/queues/pika-other/target", json={}).status_code == 201
    channel.confirm_delivery()
    with pytest.raises(pika.exceptions.UnroutableError):
        channel.basic_publish("", "pika-other/target", b"sideways", mandatory=True)
    assert session.get(f"{amqp_node.url}/api/queues/pika-other/target").json()["messages"] == 0
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        channel.queue_declare("pika-other", passive=True)
    assert refused.value.reply_code == 404, refused.value


def test_a_consumer_whose_read_permission_is_revoked_is_cancelled_at_its_next_poll(
    amqp_node: NodeProcess,
) -> None:
    """The consumer's polls are served by the queue's door on its leader (no HTTP request): each still
    checks the user's permission, so a revoked one ends the consumer and nothing more reaches it."""
    with SyncClient([amqp_node.url]) as admin:
        admin.declare("revoked")
        admin.put_user("reader", "reader-pass-1")
        admin.set_permissions("reader", read="^revoked$")
        assert amqp_node.amqp_port is not None
        credentials = pika.PlainCredentials("reader", "reader-pass-1")
        parameters = pika.ConnectionParameters("127.0.0.1", amqp_node.amqp_port, credentials=credentials)
        connection = pika.BlockingConnection(parameters)
        try:
            channel = connection.channel()
            got: list[bytes] = []
            cancelled: list[object] = []
            channel.add_on_cancel_callback(cancelled.append)
            channel.basic_consume("revoked", lambda _ch, _m, _p, body: got.append(body), auto_ack=True)
            admin.publish("revoked", ["before"])

            def received(what: list) -> bool:
                connection.process_data_events(time_limit=0.05)
                return bool(what)

            eventually_sync(lambda: received(got), "the message published before the revocation", timeout=10)
            admin.set_permissions("reader", read="^nothing$")
            eventually_sync(lambda: received(cancelled), "the consumer cancelled by the node", timeout=15)
            admin.publish("revoked", ["after"])
            connection.process_data_events(time_limit=0.5)
            assert got == [b"before"]
        finally:
            if connection.is_open:
                connection.close()
