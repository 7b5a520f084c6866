"""TLS for HTTP and Raft: a cluster with certificates from the openssl recipe of docs/security.md
forms, serves HTTPS to clients that trust its CA, and refuses plain HTTP."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import aiohttp
import pytest

from api.client import QuorumqClient
from cli.node_processes import ProcessCluster


def make_certificates(directory: Path) -> dict[str, str]:
    """A CA and one node certificate for 127.0.0.1 signed by it (the recipe in docs/security.md)."""
    ca_key, ca_cert = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "node.key", directory / "node.csr", directory / "node.pem"
    ext = directory / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    commands = [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca_cert,
         "-days", "2", "-subj", "/CN=quorumq-test-ca"],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=node"],
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial",
         "-out", cert, "-days", "2", "-extfile", ext],
    ]  # fmt: skip
    for command in commands:
        subprocess.run([str(c) for c in command], check=True, capture_output=True)
    return {
        "QUORUMQ_TLS_CERT": str(cert),
        "QUORUMQ_TLS_KEY": str(key),
        "QUORUMQ_TLS_CA": str(ca_cert),
        "QUORUMQ_TLS_HTTP": "true",
        "QUORUMQ_TLS_RAFT": "true",
    }


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
