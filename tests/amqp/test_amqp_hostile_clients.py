"""Hostile AMQP clients against a real node: random bytes instead of the protocol header, random frames
after a valid opening, and huge declared sizes. Each gets its connection closed (with `connection.close`
where the protocol allows it), nothing else: the node keeps serving, and a well-behaved client connects
and publishes right after."""

from __future__ import annotations

import socket
import struct

import pika
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raw_client import RawClient

from api.amqp.frame_io import PROTOCOL_HEADER
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER

pytestmark = pytest.mark.process

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def ends(sock: socket.socket) -> bytes:
    """Everything the node sends until it closes the socket (failing if it has not within 10 s)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        pytest.fail(f"the node kept the hostile connection open; it sent {received[-200:]!r}")
    finally:
        sock.close()
    return received


def still_serves(port: int) -> None:
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    connection = pika.BlockingConnection(
        pika.ConnectionParameters("127.0.0.1", port, credentials=credentials)
    )
    try:
        channel = connection.channel()
        channel.queue_declare("after-hostile", durable=True)
        channel.confirm_delivery()
        channel.basic_publish("", "after-hostile", b"still here")
    finally:
        connection.close()


@FUZZ
@given(st.binary(min_size=1, max_size=64).filter(lambda b: not PROTOCOL_HEADER.startswith(b)))
def test_a_client_that_does_not_speak_amqp_gets_the_header_and_the_door(
    amqp_port: int, opening: bytes
) -> None:
    sock = socket.create_connection(("127.0.0.1", amqp_port), timeout=10)
    sock.sendall(opening + b"\0" * 8)  # at least a header's worth, so the node reads one
    assert ends(sock) in (PROTOCOL_HEADER, b"")


@FUZZ
@given(st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=6))
def test_random_frames_after_the_opening_close_the_connection_and_nothing_else(
    amqp_port: int, payloads: list[bytes]
) -> None:
    sock = RawClient.opened(amqp_port).sock
    hostile = b""
    for index, payload in enumerate(payloads):
        kind = (1, 2, 3, 8, 7)[index % 5]
        hostile += struct.pack(">BHI", kind, 1, len(payload)) + payload + b"\xce"
    sock.sendall(hostile + b"\xff" * 16)  # and a frame of no type after them
    ends(sock)
    still_serves(amqp_port)


def test_a_frame_declaring_gigabytes_is_refused_unread_and_the_node_serves_on(amqp_port: int) -> None:
    sock = RawClient.opened(amqp_port).sock
    sock.sendall(struct.pack(">BHI", 3, 1, 0xFFFFFFF0))
    assert b"FRAME_ERROR" in ends(sock)
    still_serves(amqp_port)
