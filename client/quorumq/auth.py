"""Client credentials and TLS trust: explicit arguments, else QUORUMQ_* environment variables.

`QUORUMQ_USER`/`QUORUMQ_PASSWORD` give HTTP Basic credentials, `QUORUMQ_TOKEN` a bearer token,
`QUORUMQ_CA_FILE` a CA bundle to verify HTTPS nodes with. Without any, requests carry `guest:guest`,
as RabbitMQ's clients do (a node accepts the built-in guest only from loopback).
"""

from __future__ import annotations

import base64
import os
import ssl
from dataclasses import dataclass, field

USER_ENV = "QUORUMQ_USER"
PASSWORD_ENV = "QUORUMQ_PASSWORD"
TOKEN_ENV = "QUORUMQ_TOKEN"
CA_FILE_ENV = "QUORUMQ_CA_FILE"
GUEST_AUTH = ("guest", "guest")


@dataclass(frozen=True)
class ClientCredentials:
    """What every request of a client carries: an Authorization header (Basic or bearer) and TLS.
    The headers are left out of the repr: they hold the password or token."""

    headers: dict[str, str] = field(repr=False)
    ssl: ssl.SSLContext | bool


def basic_header(user: str, password: str) -> str:
    """The `Authorization` value of HTTP Basic credentials."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


Auth = tuple[str, str]
"""(user, password) of HTTP Basic credentials; an `aiohttp.BasicAuth` is one too."""


def resolve_credentials(
    auth: Auth | None, token: str | None, tls: ssl.SSLContext | bool | None
) -> ClientCredentials:
    """Explicit `auth`/`token`/`tls` win; the environment fills in what was not given."""
    if auth is not None and token is not None:
        raise ValueError("give either auth or token, not both")
    headers: dict[str, str] = {}
    if auth is not None:
        headers["Authorization"] = basic_header(auth[0], auth[1])
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    elif os.environ.get(TOKEN_ENV):
        headers["Authorization"] = f"Bearer {os.environ[TOKEN_ENV]}"
    elif os.environ.get(USER_ENV):
        headers["Authorization"] = basic_header(os.environ[USER_ENV], os.environ.get(PASSWORD_ENV, ""))
    else:
        headers["Authorization"] = basic_header(*GUEST_AUTH)
    if tls is None:
        ca_file = os.environ.get(CA_FILE_ENV)
        tls = ssl.create_default_context(cafile=ca_file) if ca_file else True
    return ClientCredentials(headers, tls)
