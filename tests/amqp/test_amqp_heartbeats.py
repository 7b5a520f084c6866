"""Heartbeats go out every half interval, whatever the client sends meanwhile; a client silent for two
intervals is dropped, one that keeps talking is not."""

from __future__ import annotations

import time

from pamqp import commands, frame
from pamqp.heartbeat import Heartbeat
from raw_client import RawClient

INTERVAL_S = 60  # half of it is far longer than the test


def test_frames_from_the_client_do_not_make_the_node_send_heartbeats(amqp_port: int) -> None:
    """Each frame the client sends tells the node it is alive; it used to wake the heartbeat loop, which
    then wrote a heartbeat at once: a write per frame received (a tenth of a node's time under single
    publishes)."""
    client = RawClient.opened(amqp_port, heartbeat=INTERVAL_S)
    beats = 0
    for _ in range(10):  # each round trip leaves the node waiting for the next frame
        client.send((0, Heartbeat()), (1, commands.Basic.Qos(prefetch_count=10)))
        while not isinstance(answer := client.receive(), commands.Basic.QosOk):
            beats += isinstance(answer, Heartbeat)
    assert beats == 0
    client.sock.close()


def test_a_silent_client_gets_heartbeats_then_is_dropped_after_two_intervals(amqp_port: int) -> None:
    client = RawClient.opened(amqp_port, heartbeat=1)
    started = time.monotonic()
    beats = 0
    while chunk := client.sock.recv(65536):  # the node closes the socket: recv answers b""
        client.buffer += chunk
        while client.buffer:
            used, _, value = frame.unmarshal(client.buffer)
            client.buffer = client.buffer[used:]
            beats += isinstance(value, Heartbeat)
    assert beats >= 2  # one every half second until it gave up
    assert 2 <= time.monotonic() - started < 8


def test_a_client_that_keeps_talking_stays_connected_past_two_intervals(amqp_port: int) -> None:
    client = RawClient.opened(amqp_port, heartbeat=1)
    until = time.monotonic() + 3
    while time.monotonic() < until:  # the client's own heartbeat timer, every half interval
        client.send((0, Heartbeat()))
        time.sleep(0.5)
    client.send((1, commands.Basic.Qos(prefetch_count=10)))
    client.until(commands.Basic.QosOk)
    client.sock.close()
