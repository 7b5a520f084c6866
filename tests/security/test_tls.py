"""TLS for HTTP and Raft: a cluster with certificates from the openssl recipe of docs/security.md
forms, serves HTTPS to clients that trust its CA, and refuses plain HTTP."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import aiohttp
import pytest

from api.client import QuorumqClient
from cli.dev_tls import make_certificates
from cli.node_processes import ProcessCluster


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_a_tls_cluster_serves_https_and_refuses_plain_http(tmp_path: Path) -> None:
    env = make_certificates(tmp_path)
    cluster = ProcessCluster.start(tmp_path / "data", 3, env=env)
    try:
        https = cluster.urls
        trust = ssl.create_default_context(cafile=env["QUORUMQ_TLS_CA"])
        async with QuorumqClient(https, tls=trust) as client:
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
