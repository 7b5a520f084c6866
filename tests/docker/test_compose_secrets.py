"""The compose files carry no usable default secret: without the cluster secret or the administrator's
password in the environment, compose refuses to run and names the missing variable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from compose_project import BASE_FILE, FIVE_FILE, JOIN_FILE, compose_command, docker_unavailable_reason, run

REQUIRED = {"QUORUMQ_CLUSTER_SECRET": "0123456789abcdef" * 2, "QUORUMQ_BOOTSTRAP_PASSWORD": "admin-password"}


@pytest.fixture(scope="module", autouse=True)
def docker_available() -> None:
    reason = docker_unavailable_reason()
    if reason is not None:
        pytest.skip(f"Docker tests need a Docker engine: {reason}")


@pytest.mark.parametrize("files", [[BASE_FILE], [BASE_FILE, FIVE_FILE], [BASE_FILE, JOIN_FILE]])
@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_compose_refuses_to_start_without_the_secret_or_the_password(files: list[Path], missing: str) -> None:
    env = {**os.environ, **REQUIRED}
    del env[missing]
    flags = [part for file in files for part in ("-f", str(file))]
    refused = run([*compose_command(), *flags, "config"], env=env, check=False)
    assert refused.returncode != 0, refused.stdout
    assert missing in refused.stderr
    accepted = run([*compose_command(), *flags, "config"], env={**os.environ, **REQUIRED}, check=False)
    assert accepted.returncode == 0, accepted.stderr
