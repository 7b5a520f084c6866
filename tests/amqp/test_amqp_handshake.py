"""What a connection's opening settles (`api.amqp.negotiation`, `api.amqp.sasl`): the tuning both sides
agree on, and the credentials in PLAIN and AMQPLAIN responses, hostile ones included."""

from __future__ import annotations

import pytest
from pamqp import encode

from api.amqp.negotiation import CHANNEL_MAX, FRAME_MAX, HEARTBEAT_S, Tuning, server_properties, settle_tuning
from api.amqp.reply_codes import ACCESS_REFUSED, AmqpError
from api.amqp.sasl import Credentials, credentials

OFFERED = Tuning(CHANNEL_MAX, FRAME_MAX, HEARTBEAT_S)


def test_the_client_may_ask_for_less_and_zero_heartbeats_turn_them_off() -> None:
    assert settle_tuning(OFFERED, 2047, 131072, 60) == OFFERED
    assert settle_tuning(OFFERED, 10, 8192, 5) == Tuning(10, 8192, 5)
    assert settle_tuning(OFFERED, 10, 8192, 0).heartbeat_s == 0
    assert settle_tuning(Tuning(0, 0, 60), 0, 0, 30) == Tuning(0, 0, 30)  # 0: no limit on either side


@pytest.mark.parametrize(
    ("channel_max", "frame_max", "why"),
    [
        (0, 131072, "channel_max 0"),
        (4000, 131072, "channel_max 4000"),
        (10, 1 << 20, "frame_max"),
        (10, 512, "below"),
    ],
)
def test_asking_for_more_than_offered_or_a_tiny_frame_is_refused(
    channel_max: int, frame_max: int, why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        settle_tuning(OFFERED, channel_max, frame_max, 60)


def test_the_server_names_the_capabilities_clients_look_for() -> None:
    capabilities = server_properties("0.1.0", "node1")["capabilities"]
    for name in ("publisher_confirms", "basic.nack", "consumer_cancel_notify", "connection.blocked"):
        assert capabilities[name] is True


def test_plain_and_amqplain_give_the_user_and_password() -> None:
    assert credentials("PLAIN", b"\x00alice\x00s3cret") == Credentials("alice", "s3cret")
    assert credentials("PLAIN", "alice\x00alice\x00pw") == Credentials("alice", "pw")  # pika sends str
    table = encode.field_table({"LOGIN": "bob", "PASSWORD": "pässword"})[4:]  # without its length
    assert credentials("AMQPLAIN", table) == Credentials("bob", "pässword")
    assert "pässword" not in repr(credentials("AMQPLAIN", table))


@pytest.mark.parametrize(
    ("mechanism", "response", "why"),
    [
        ("EXTERNAL", b"", "unsupported authentication mechanism"),
        ("PLAIN", b"alice\x00pw", "separated by NUL"),
        ("PLAIN", b"\x00\xff\xfe\x00pw", "UTF-8"),
        ("PLAIN", b"root\x00alice\x00pw", "may not act as 'root'"),
        ("AMQPLAIN", b"\x05LOG", "field table"),  # a key longer than the table
        ("AMQPLAIN", b"\x05LOGINZ", "field table"),  # a value of no known type
        ("AMQPLAIN", encode.field_table({"LOGIN": "bob"})[4:], "LOGIN and PASSWORD"),
        ("AMQPLAIN", encode.field_table({"LOGIN": 5, "PASSWORD": "x"})[4:], "LOGIN and PASSWORD"),
    ],
)
def test_a_response_that_cannot_be_read_refuses_the_connection(
    mechanism: str, response: bytes, why: str
) -> None:
    with pytest.raises(AmqpError, match=why) as refused:
        credentials(mechanism, response)
    assert (refused.value.code, refused.value.connection) == (ACCESS_REFUSED, True)
