"""TLS for HTTP and Raft: a cluster with certificates from the openssl recipe of docs/operate/security.md
forms, serves HTTPS to clients that trust its CA (given as a context, `QUORUMQ_CA_FILE` or `--ca-file`),
and refuses plain HTTP; nodes verify the CA and host name of the node they call, and the Raft port takes
only certificates of the cluster's CA."""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
import subprocess
from pathlib import Path

import aiohttp
import pytest
from click.testing import CliRunner
from support.eventually import eventually

from cli.app import cli as quorumq_cli
from cli.dev_tls import make_certificates
from cli.node_processes import (
    HARNESS_HEADERS,
    HARNESS_PASSWORD,
    HARNESS_USER,
    NodeProcess,
    ProcessCluster,
    plan_cluster,
    wait_healthy,
)
from cluster.replication.transport import FRAME_HEADER
from quorumq import Client, QuorumqError, SyncClient
from quorumq.auth import CA_FILE_ENV

HARNESS_AUTH = (HARNESS_USER, HARNESS_PASSWORD)
CLI_LOGIN = ("--user", HARNESS_USER, "--password", HARNESS_PASSWORD, "--request-timeout", "3")


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


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_clients_trust_a_tls_cluster_by_context_ca_file_variable_or_ca_file_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Client(tls=...)`, `QUORUMQ_CA_FILE` and `quorumq --ca-file` each make a client trust the cluster's
    CA; without any, a client does not trust the node's certificate and sends nothing."""
    monkeypatch.delenv(CA_FILE_ENV, raising=False)
    env = make_certificates(tmp_path)
    cluster = ProcessCluster.start(tmp_path / "data", 1, env=env)
    try:
        url, ca = cluster.urls[0], env["QUORUMQ_TLS_CA"]
        with pytest.raises(QuorumqError), SyncClient([url], auth=HARNESS_AUTH, timeout=3) as untrusting:
            untrusting.whoami()
        trust = ssl.create_default_context(cafile=ca)
        with SyncClient([url], auth=HARNESS_AUTH, tls=trust) as client:
            assert client.whoami()["name"] == HARNESS_USER
        login = ["--node", url, *CLI_LOGIN]
        refused = CliRunner().invoke(quorumq_cli, [*login, "queues"])
        assert refused.exit_code != 0, refused.output
        listed = CliRunner().invoke(quorumq_cli, [*login, "--ca-file", ca, "queues"])
        assert listed.exit_code == 0, listed.output
        monkeypatch.setenv(CA_FILE_ENV, ca)
        with SyncClient([url], auth=HARNESS_AUTH) as client:
            assert client.whoami()["name"] == HARNESS_USER
        assert CliRunner().invoke(quorumq_cli, [*login, "queues"]).exit_code == 0
    finally:
        cluster.stop()


def _certificate_for(directory: Path, cluster_ca: Path, alt_names: str) -> dict[str, str]:
    """A node certificate signed by the CA whose files `make_certificates` left in `cluster_ca`, for
    `alt_names` (its subjectAltName), as the TLS settings of a node trusting that CA."""
    directory.mkdir(parents=True)
    key, csr, cert, ext = (directory / name for name in ("node.key", "node.csr", "node.pem", "san.ext"))
    ext.write_text(f"subjectAltName={alt_names}\n")
    commands = [
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=node"],
        ["openssl", "x509", "-req", "-in", csr, "-CA", cluster_ca / "ca.pem", "-CAkey", cluster_ca / "ca.key",
         "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext],
    ]  # fmt: skip
    for command in commands:
        subprocess.run([str(c) for c in command], check=True, capture_output=True)
    return {"QUORUMQ_TLS_CERT": str(cert), "QUORUMQ_TLS_KEY": str(key), "QUORUMQ_TLS_HTTP": "true"}


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_nodes_verify_the_ca_and_the_host_name_of_the_node_they_call(tmp_path: Path) -> None:
    """node1's certificate is right; node2's is signed by the cluster's CA for another name; node3's names
    127.0.0.1 but is signed by another CA. A request node1 forwards to node2 or node3 fails as unreachable
    (nothing is sent to a node that does not prove it is the one called), and one to node1 is served."""
    for directory in ("cluster", "rogue"):
        (tmp_path / directory).mkdir()
    right = make_certificates(tmp_path / "cluster")
    rogue = make_certificates(tmp_path / "rogue")
    wrong_name = _certificate_for(tmp_path / "wrong-name", tmp_path / "cluster", "DNS:elsewhere.invalid")
    rogue_certificate = {name: rogue[name] for name in ("QUORUMQ_TLS_CERT", "QUORUMQ_TLS_KEY")}
    settings = [right, {**right, **wrong_name}, {**right, **rogue_certificate}]
    nodes = plan_cluster(3, tmp_path / "data")
    for node, tls in zip(nodes, settings, strict=True):
        node.env = {**os.environ, **tls, "QUORUMQ_TLS_RAFT": "false"}  # Raft in the clear: the cluster forms
        node.start()
    unverified = ssl.create_default_context()
    unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE  # the test's own calls
    try:
        async with aiohttp.ClientSession(headers=HARNESS_HEADERS) as session:

            async def status(node: NodeProcess, path: str) -> tuple[int, dict]:
                async with session.get(node.url + path, ssl=unverified) as answer:
                    return answer.status, await answer.json()

            for node in nodes:

                async def healthy(node: NodeProcess = node) -> bool:
                    return (await status(node, "/api/health"))[1].get("status") == "ok"

                await eventually(healthy, f"{node.name} to be healthy", timeout=60, interval=0.2)
            for target, why in (("node2", "address mismatch"), ("node3", "unable to get local issuer")):
                code, body = await status(nodes[0], f"/api/queues/any-q/members/{target}")
                assert code == 503 and "unreachable" in body["reason"], (target, body)
                assert why.lower() in body["reason"].lower(), (target, body)
            for caller in nodes[1:]:
                code, body = await status(caller, "/api/queues/any-q/members/node1")  # answered by node1
                assert code in (200, 404), (caller.name, body)
    finally:
        for node in nodes:
            node.stop()


async def _challenged_over_tls(node: NodeProcess, tls: ssl.SSLContext) -> bool:
    """Whether the node's Raft port, dialled over TLS with `tls`, sends its handshake challenge."""
    try:
        reader, writer = await asyncio.open_connection(node.host, node.raft_port, ssl=tls)
    except (ssl.SSLError, OSError):
        return False
    try:
        (length,) = FRAME_HEADER.unpack(await asyncio.wait_for(reader.readexactly(FRAME_HEADER.size), 30))
        await reader.readexactly(length)
        return True
    except (ssl.SSLError, OSError, asyncio.IncompleteReadError):
        return False
    finally:
        writer.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_with_tls_raft_the_raft_port_takes_only_a_certificate_of_the_cluster_ca(tmp_path: Path) -> None:
    """Mutual TLS: a dialler without a certificate, or with one of another CA, gets no challenge."""
    for directory in ("cluster", "rogue"):
        (tmp_path / directory).mkdir()
    env = make_certificates(tmp_path / "cluster")
    rogue = make_certificates(tmp_path / "rogue")
    cluster = ProcessCluster.start(tmp_path / "data", 1, env={**env, "QUORUMQ_TLS_HTTP": "false"})
    try:
        node = cluster.nodes[0]

        def dialler(certificate: dict[str, str] | None) -> ssl.SSLContext:
            context = ssl.create_default_context(cafile=env["QUORUMQ_TLS_CA"])
            if certificate is not None:
                context.load_cert_chain(certificate["QUORUMQ_TLS_CERT"], certificate["QUORUMQ_TLS_KEY"])
            return context

        assert not await _challenged_over_tls(node, dialler(None))
        assert not await _challenged_over_tls(node, dialler(rogue))
        assert await _challenged_over_tls(node, dialler(env))
    finally:
        cluster.stop()
