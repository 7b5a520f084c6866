"""Credentials and TLS options against a cluster that serves HTTPS only and has no loopback guest."""

from __future__ import annotations

import shutil
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import publish_orders, queue_stats, run, stream_to_parquet

from cli.dev_tls import make_certificates
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster
from spark_io.options import SinkOptions, SourceOptions

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

READER, READER_PASSWORD = "etl-reader", "reader-pass-7e1f"


class Secured:
    """The cluster, its CA file, and administrator client arguments."""

    def __init__(self, cluster: ProcessCluster, ca_file: str) -> None:
        self.cluster = cluster
        self.ca_file = ca_file
        self.admin: dict[str, Any] = {
            "auth": (HARNESS_USER, HARNESS_PASSWORD),
            "tls": ssl.create_default_context(cafile=ca_file),
        }

    def options(self, queue: str, **more: str) -> dict[str, str]:
        return {"nodes": ",".join(self.cluster.urls), "queue": queue, "caFile": self.ca_file, **more}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """HTTPS nodes without the guest, and a user who may only read `cred-*` queues."""
    directory = tmp_path_factory.mktemp("secured")
    env = make_certificates(directory) | {"QUORUMQ_LOOPBACK_GUEST": "false"}
    cluster = ProcessCluster.start(directory / "data", 3, env=env)
    setup = Secured(cluster, env["QUORUMQ_TLS_CA"])

    async def add_reader(client: Any) -> None:
        await client.put_user(READER, READER_PASSWORD)
        await client.set_permissions(READER, read="^cred-.*$")
        await client.declare("cred-out")

    run(cluster.urls, add_reader, **setup.admin)
    yield setup
    cluster.stop()


def test_a_read_only_user_reads_over_tls_with_a_password_file_and_cannot_write(
    spark, secured: Secured, tmp_path: Path
) -> None:
    ids = publish_orders(secured.cluster.urls, "cred-in", 300, **secured.admin)
    password_file = tmp_path / "reader.password"
    password_file.write_text(READER_PASSWORD + "\n")  # as a mounted secret often ends
    credentials = {"user": READER, "passwordFile": str(password_file)}
    options = secured.options("cred-in", maxRecordsPerBatch="120", **credentials)
    stream_to_parquet(spark, options, tmp_path).trigger(availableNow=True).start().awaitTermination()
    got = [r.id for r in spark.read.parquet(str(tmp_path / "out")).select("id").collect()]
    assert sorted(got) == sorted(ids)
    assert queue_stats(secured.cluster.urls, "cred-in", **secured.admin)["messages"] == 0

    token = run(
        secured.cluster.urls,
        lambda client: client.create_token(),
        auth=(READER, READER_PASSWORD),
        tls=secured.admin["tls"],
    )[0]
    writer = spark.createDataFrame([("x",)], "body STRING").write.format("quorumq").mode("append")
    for key, value in secured.options("cred-out", token=token).items():
        writer = writer.option(key, value)
    with pytest.raises(Exception) as refused:
        writer.save()
    assert "permission denied for the token" in str(refused.value)
    assert f"user '{READER}' lacks write permission on queue 'cred-out'" in str(refused.value)
    assert token not in str(refused.value)
    assert token not in repr(SinkOptions.parse(secured.options("cred-out", token=token)))


def test_a_wrong_password_fails_the_query_with_a_clear_error_that_hides_it(
    spark, secured: Secured, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish_orders(secured.cluster.urls, "cred-wrong", 10, **secured.admin)
    wrong = "not-the-reader-password"
    options = secured.options("cred-wrong", user=READER, password=wrong)
    assert wrong not in repr(SourceOptions.parse(options))
    query = stream_to_parquet(spark, options, tmp_path).trigger(availableNow=True).start()
    with pytest.raises(Exception) as refused:
        query.awaitTermination()
    message = str(refused.value)
    assert f"the cluster refused user '{READER}': wrong user name or password" in message
    assert "check the options user, password/passwordFile or token" in message
    reader = spark.readStream.format("quorumq")
    for key, value in options.items():
        reader = reader.option(key, value)
    reader.load().explain(extended=True)
    plan = capsys.readouterr().out
    assert "password=*********(redacted)" in plan
    assert wrong not in message + plan
    assert queue_stats(secured.cluster.urls, "cred-wrong", **secured.admin)["messages_ready"] == 10
