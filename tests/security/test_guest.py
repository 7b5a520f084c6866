"""The built-in guest: from loopback with its password only, refused from anywhere else; no request
without credentials is anyone. Clients given no credentials log in as the guest."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from security_helpers import call, non_loopback_address

from api.login_throttle import LOGIN_FAILURES
from cli.app import cli
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster, plan_cluster, wait_healthy
from quorumq import Client
from quorumq.auth import PASSWORD_ENV, TOKEN_ENV, USER_ENV, basic_header

GUEST = basic_header("guest", "guest")


async def test_loopback_callers_need_credentials_and_the_guest_its_password(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cluster = ProcessCluster.start(tmp_path, 3)
    try:
        anonymous = await call("GET", cluster.urls[0] + "/api/whoami")
        assert anonymous.status == 401, anonymous.body
        assert "WWW-Authenticate" not in anonymous.headers  # no browser login dialog, no cached credentials
        assert (await call("PUT", cluster.urls[1] + "/api/queues/by-nobody")).status == 401
        guest = await call("GET", cluster.urls[2] + "/api/whoami", authorization=GUEST)
        assert guest.status == 200 and guest.body["name"] == "guest"
        declared = await call("PUT", cluster.urls[1] + "/api/queues/by-guest", authorization=GUEST)
        assert declared.status == 201
        wrong = await call("GET", cluster.urls[2] + "/api/whoami", authorization=basic_header("guest", "no"))
        assert wrong.status == 401
    finally:
        cluster.stop()


async def test_clients_given_no_credentials_log_in_as_the_guest(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    for name in (USER_ENV, PASSWORD_ENV, TOKEN_ENV):
        monkeypatch.delenv(name, raising=False)
    cluster = ProcessCluster.start(tmp_path, 3)
    try:
        async with Client(cluster.urls) as client:
            assert (await client.whoami())["name"] == "guest"
        listed = CliRunner().invoke(cli, ["--node", ",".join(cluster.urls), "queues"])
        assert listed.exit_code == 0, listed.output
    finally:
        cluster.stop()


async def test_the_guest_is_refused_off_loopback_while_real_users_work(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    for name in ("QUORUMQ_USER", "QUORUMQ_PASSWORD"):  # starting nodes off loopback sets these: undo after
        monkeypatch.setenv(name, "")
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    nodes = plan_cluster(3, tmp_path, host=address)
    for node in nodes:
        node.start()
    try:
        wait_healthy(nodes)
        url = nodes[0].url
        anonymous = await call("GET", url + "/api/queues")
        assert anonymous.status == 401
        guest = await call("GET", url + "/api/queues", authorization=basic_header("guest", "guest"))
        assert guest.status == 401 and "loopback" in guest.body["reason"]
        admin = basic_header(HARNESS_USER, HARNESS_PASSWORD)
        assert (
            await call("PUT", nodes[1].url + "/api/queues/off-loopback", authorization=admin)
        ).status == 201
    finally:
        for node in nodes:
            node.stop()


async def test_the_disabled_guest_is_refused_at_once_and_not_counted_as_a_failed_login(
    secured: ProcessCluster,
) -> None:
    url, source = secured.urls[0] + "/api/whoami", "127.0.0.51"  # a NAT of clients sending the default
    for _ in range(LOGIN_FAILURES + 2):
        refused = await call("GET", url, authorization=GUEST, source=source)
        assert refused.status == 401, refused.body
        assert refused.body["reason"] == "the guest user is disabled on this node"
    admin = basic_header(HARNESS_USER, HARNESS_PASSWORD)
    assert (await call("GET", url, authorization=admin, source=source)).status == 200
