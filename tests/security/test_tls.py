"""TLS for HTTP and Raft: a cluster with certificates from the openssl recipe of docs/operate/security.md
forms, serves HTTPS to clients that trust its CA, and refuses plain HTTP."""

from __future__ import annotations

import os
import shutil
import ssl
from pathlib import Path

import aiohttp
import pytest

from cli.dev_tls import make_certificates
from cli.node_processes import HARNESS_HEADERS, ProcessCluster, plan_cluster, wait_healthy
from quorumq import Client


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_a_tls_cluster_serves_https_and_refuses_plain_http(tmp_path: Path) -> None:
    env = make_certificates(tmp_path)
    cluster = ProcessCluster.start(tmp_path / "data", 3, env=env)
    try:
        https = cluster.urls
        trust = ssl.create_default_context(cafile=env["QUORUMQ_TLS_CA"])
        async with Client(https, tls=trust) as client:
            await client.declare("over-tls")
            await client.publish("over-tls", ["secret"])
            assert [d.body for d in await client.get("over-tls", ack="auto")] == [b"secret"]
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError):
                async with session.get(https[0].replace("https:", "http:") + "/api/health") as answer:
                    await answer.read()
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                async with session.get(https[0] + "/api/health") as answer:
                    await answer.read()
    finally:
        cluster.stop()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_a_forward_to_a_node_advertising_plain_http_fails_as_unreachable(tmp_path: Path) -> None:
    env = make_certificates(tmp_path)
    nodes = plan_cluster(3, tmp_path / "data")
    for node in nodes:
        node.env = {**os.environ, **env}
    misconfigured = nodes[1]
    misconfigured.env["QUORUMQ_ADVERTISE_HTTP"] = f"http://{misconfigured.host}:{misconfigured.http_port}"
    for node in nodes:
        node.start()
    try:
        wait_healthy(nodes)
        trust = ssl.create_default_context(cafile=env["QUORUMQ_TLS_CA"])
        url = f"{nodes[0].url}/api/queues/any-q/members/{misconfigured.name}"  # forwarded to that node
        async with (
            aiohttp.ClientSession() as session,
            session.get(url, headers=HARNESS_HEADERS, ssl=trust) as answer,
        ):
            body = await answer.json()
        assert answer.status == 503, body  # no assertion sent in the clear, and no 500
        assert "unreachable" in body["reason"] and "plain HTTP" in body["reason"], body
    finally:
        for node in nodes:
            node.stop()
