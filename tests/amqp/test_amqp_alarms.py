"""A resource alarm told to AMQP clients as RabbitMQ tells them: a connection that published and said it
takes `connection.blocked` hears it when the node's disk fills below its limit, and
`connection.unblocked` once the space is back."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pika
import pytest
from support.small_disk import small_disk

from cli.node_processes import (
    HARNESS_PASSWORD,
    HARNESS_USER,
    ProcessCluster,
    free_ports,
    plan_cluster,
    wait_healthy,
)

pytestmark = pytest.mark.process

MIB = 1024 * 1024


@pytest.fixture
def node_on_a_small_disk(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """One node whose data directory is a 64 MiB disk with a 24 MiB free-space limit; its AMQP port and
    the disk."""
    (node,) = plan_cluster(1, tmp_path)
    port = free_ports(1)[0]
    with small_disk(node.data_dir, 64 * MIB):
        node.env = {**os.environ, "QUORUMQ_DISK_FREE_LIMIT": str(24 * MIB)}
        node.amqp_port = port
        node.start()
        cluster = ProcessCluster([node])
        try:
            wait_healthy([node])
            yield port, node.data_dir
        finally:
            cluster.stop()


def until(connection: pika.BlockingConnection, condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"no {what} in 20 s"
        connection.process_data_events(time_limit=0.2)


def test_a_publishing_connection_is_blocked_by_a_disk_alarm_and_unblocked_after(
    node_on_a_small_disk: tuple[int, Path],
) -> None:
    port, disk = node_on_a_small_disk
    credentials = pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD)
    connection = pika.BlockingConnection(
        pika.ConnectionParameters("127.0.0.1", port, credentials=credentials)
    )
    heard: list[str] = []
    connection.add_on_connection_blocked_callback(lambda _, frame: heard.append(frame.method.reason))
    connection.add_on_connection_unblocked_callback(lambda _, frame: heard.append("unblocked"))
    try:
        channel = connection.channel()
        channel.queue_declare("alarmed", durable=True)
        channel.confirm_delivery()
        channel.basic_publish("", "alarmed", b"before the disk filled")
        filler = disk / "filler"
        with filler.open("wb") as out:
            out.write(b"\0" * (shutil.disk_usage(disk).free - 8 * MIB))
            out.flush()
            os.fsync(out.fileno())
        until(connection, lambda: len(heard) >= 1, "connection.blocked")
        assert heard[0].startswith("resource alarm (node1: disk")
        filler.unlink()
        until(connection, lambda: "unblocked" in heard, "connection.unblocked")
        channel.basic_publish("", "alarmed", b"after")
    finally:
        connection.close()
