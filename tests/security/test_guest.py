"""The built-in guest: full rights without credentials from loopback, refused from anywhere else."""

from __future__ import annotations

import pytest
from security_helpers import call, non_loopback_address

from api.client_auth import basic_header
from cli.node_processes import HARNESS_PASSWORD, HARNESS_USER, ProcessCluster, plan_cluster, wait_healthy


async def test_loopback_callers_are_the_guest_without_credentials(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cluster = ProcessCluster.start(tmp_path, 3)
    try:
        answer = await call("GET", cluster.urls[0] + "/api/whoami")
        assert answer.status == 200 and answer.body["name"] == "guest"
        assert (await call("PUT", cluster.urls[1] + "/api/queues/by-guest")).status == 201
        with_password = await call(
            "GET", cluster.urls[2] + "/api/whoami", authorization=basic_header("guest", "guest")
        )
        assert with_password.body["name"] == "guest"
        wrong = await call(
            "GET", cluster.urls[2] + "/api/whoami", authorization=basic_header("guest", "nope")
        )
        assert wrong.status == 401
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
