"""Client credentials never show in a repr (logs, tracebacks, debuggers); a client given none takes them
from the environment."""

from __future__ import annotations

import base64

import pytest
from security_helpers import ADMIN, add_user, call

from cli.node_processes import HARNESS_USER, ProcessCluster
from quorumq import Client
from quorumq.auth import PASSWORD_ENV, TOKEN_ENV, USER_ENV, resolve_credentials


def test_the_repr_of_client_credentials_hides_the_authorization_header() -> None:
    basic = resolve_credentials(("alice", "s3cret-pw"), None, None)
    bearer = resolve_credentials(None, "tok-abc123", None)
    encoded = base64.b64encode(b"alice:s3cret-pw").decode()
    for shown in (repr(basic), str(basic)):
        assert encoded not in shown and "s3cret-pw" not in shown, shown
    assert "tok-abc123" not in repr(bearer), repr(bearer)
    assert basic.headers["Authorization"] == f"Basic {encoded}"  # still sent


async def test_clients_given_no_credentials_take_them_from_the_environment(
    secured: ProcessCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`QUORUMQ_USER`/`QUORUMQ_PASSWORD`, or `QUORUMQ_TOKEN` (which wins), fill in what a client was not
    given; credentials given to the client win over both."""
    await add_user(secured.urls, "env-user", "env-pw", {})
    minted = await call("POST", secured.urls[0] + "/api/tokens", authorization=ADMIN, json={"ttl_s": 600})
    assert minted.status == 201, minted.body
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv(USER_ENV, "env-user")
    monkeypatch.setenv(PASSWORD_ENV, "env-pw")
    async with Client(secured.urls) as client:
        assert (await client.whoami())["name"] == "env-user"
    monkeypatch.setenv(TOKEN_ENV, minted.body["token"])  # the harness administrator's
    async with Client(secured.urls) as client:
        assert (await client.whoami())["name"] == HARNESS_USER
    async with Client(secured.urls, auth=("env-user", "env-pw")) as client:
        assert (await client.whoami())["name"] == "env-user"
