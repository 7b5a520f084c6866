"""No public cluster secret: a node reachable off loopback does not start without a secret of its own,
and the published development secret forges nothing on a harness cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from security_helpers import call, harness_assertion

from cli.command_group import EXIT_USAGE
from cli.node_processes import ProcessCluster, free_ports, plan_cluster, wait_healthy
from cluster.security.cluster_secret import SECRET_FILE
from cluster.security.peer_auth import NODE_AUTH_HEADER, body_digest

START_TIMEOUT_S = 60


@pytest.mark.parametrize("secret", [None, "quorumq-dev-secret", "change-me-quorumq-compose"])
def test_a_node_reachable_off_loopback_exits_without_a_secret_of_its_own(
    tmp_path: Path, secret: str | None
) -> None:
    http_port, raft_port = free_ports(2, "0.0.0.0")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUORUMQ_CLUSTER_SECRET")}
    if secret is not None:
        env["QUORUMQ_CLUSTER_SECRET"] = secret
    command = [sys.executable, "-m", "cli.app", "server", "--node=n1", f"--data-dir={tmp_path / 'n1'}"]
    command += [f"--http=0.0.0.0:{http_port}", f"--raft=0.0.0.0:{raft_port}"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = process.communicate(timeout=START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("a node reachable off loopback started without a secret of its own")
    assert process.returncode == EXIT_USAGE, (process.returncode, stderr)  # as for any bad setting
    assert "QUORUMQ_CLUSTER_SECRET" in stderr, stderr


async def test_the_development_secret_forges_no_node_assertion(secured: ProcessCluster) -> None:
    forged = harness_assertion(
        "@node", "GET", "/api/users", body_digest(b""), to="node1", secret="quorumq-dev-secret"
    )
    answer = await call("GET", secured.urls[0] + "/api/users", headers={NODE_AUTH_HEADER: forged})
    assert answer.status == 401, answer.body


def test_a_lone_node_on_loopback_starts_with_a_generated_secret(tmp_path: Path) -> None:
    (node,) = plan_cluster(1, tmp_path)
    node.env = {**os.environ, "QUORUMQ_CLUSTER_SECRET": ""}
    try:
        node.start()
        wait_healthy([node])
        generated = (node.data_dir / SECRET_FILE).read_text()
        node.stop()
        node.start()
        wait_healthy([node])
        assert (node.data_dir / SECRET_FILE).read_text() == generated
    finally:
        node.stop()
