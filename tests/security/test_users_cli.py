"""`quorumq users` against a real cluster, and credentials given to the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cli.app import cli
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster

NO_ENV_CREDENTIALS = {"QUORUMQ_USER": None, "QUORUMQ_PASSWORD": None, "QUORUMQ_TOKEN": None}


def run(cluster: ProcessCluster, *args: str) -> tuple[int, str]:
    """Run `quorumq --node N ... ARGS` with no credentials from the environment; returns the exit code
    and the combined output."""
    nodes = ",".join(cluster.urls)
    result = CliRunner().invoke(cli, ["--node", nodes, *args], env=NO_ENV_CREDENTIALS)
    return result.exit_code, result.output


def test_users_add_set_permissions_list_and_delete(secured: ProcessCluster) -> None:
    admin = ("--user", HARNESS_USER, "--password", HARNESS_PASSWORD)
    assert run(secured, *admin, "users", "add", "carol", "--password", "c-pw")[0] == 0
    assert run(secured, *admin, "users", "set-permissions", "carol", "--write", "^carol$")[0] == 0
    code, listed = run(secured, *admin, "--formatter", "json", "users", "list")
    carol = next(u for u in json.loads(listed) if u["name"] == "carol")
    assert carol["permissions"] == {"configure": "", "write": "^carol$", "read": ""}
    code, refused = run(secured, "--user", "carol", "--password", "c-pw", "users", "list")
    assert code == 1 and "HTTP 403" in refused
    code, anonymous = run(secured, "queues")
    assert code == 1 and "HTTP 401" in anonymous
    assert run(secured, *admin, "users", "delete", "carol")[0] == 0
