"""AMQP over TLS (`amqps`): a node with a certificate of the cluster's CA serves pika over TLS, and a
client that does not trust that CA is refused at the handshake."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from cli.dev_tls import make_certificates
from cli.node_processes import (
    HARNESS_PASSWORD,
    HARNESS_USER,
    ProcessCluster,
    free_ports,
    plan_cluster,
    wait_healthy,
)

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def amqps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """One node serving HTTPS and AMQP over TLS: its amqps port and the CA file."""
    directory = tmp_path_factory.mktemp("amqps")
    tls = make_certificates(directory)
    (node,) = plan_cluster(1, directory / "data")
    port = free_ports(1)[0]
    node.env = {**os.environ, **tls}
    node.extra_args = [f"--amqps=127.0.0.1:{port}"]
    node.start()
    cluster = ProcessCluster([node])
    try:
        wait_healthy([node])
        yield port, tls["QUORUMQ_TLS_CA"]
    finally:
        cluster.stop()


def test_pika_publishes_and_gets_over_tls(amqps: tuple[int, str]) -> None:
    port, ca = amqps
    context = ssl.create_default_context(cafile=ca)
    parameters = pika.ConnectionParameters(
        "127.0.0.1",
        port,
        credentials=pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD),
        ssl_options=pika.SSLOptions(context, "127.0.0.1"),
    )
    connection = pika.BlockingConnection(parameters)
    try:
        channel = connection.channel()
        channel.queue_declare("tls", durable=True)
        channel.confirm_delivery()
        channel.basic_publish("", "tls", b"secret")
        assert channel.basic_get("tls", auto_ack=True)[2] == b"secret"
    finally:
        connection.close()


def test_a_client_that_does_not_trust_the_cluster_ca_is_refused(
    amqps: tuple[int, str], tmp_path: Path
) -> None:
    port, _ = amqps
    other_ca = make_certificates(tmp_path)["QUORUMQ_TLS_CA"]
    parameters = pika.ConnectionParameters(
        "127.0.0.1",
        port,
        credentials=pika.PlainCredentials(HARNESS_USER, HARNESS_PASSWORD),
        ssl_options=pika.SSLOptions(ssl.create_default_context(cafile=other_ca), "127.0.0.1"),
        connection_attempts=1,
    )
    with pytest.raises((pika.exceptions.AMQPConnectionError, ssl.SSLCertVerificationError)):
        pika.BlockingConnection(parameters)
