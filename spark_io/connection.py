"""How the connector reaches the cluster: node addresses, credentials and TLS trust, as plain data.

Spark ships a `Connection` to the executors inside the options; a password file and a CA file are read
where a client is built (on the driver for offsets, on each executor for reads and writes), so a secret
mounted on the executors never passes through the driver. `repr` hides the password and the token, so
neither shows in Spark plans, the UI or logs.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quorumq import Client, SyncClient
from spark_io.option_values import OptionError, required

REQUEST_TIMEOUT_S = 30.0
HIDDEN = "<hidden>"


@dataclass(frozen=True)
class Connection:
    """`nodes` (comma-separated HTTP(S) addresses), `user` with `password` or `passwordFile`, or `token`
    (a bearer token), `caFile` (a PEM bundle to verify HTTPS nodes with) and `vhost` (the virtual host of
    the queues named, `/` by default).

    Without credentials the clients fall back to QUORUMQ_USER/QUORUMQ_PASSWORD/QUORUMQ_TOKEN in the
    environment of each process, then to `guest:guest`; without `caFile` to QUORUMQ_CA_FILE, then the
    system's CAs."""

    nodes: tuple[str, ...]
    user: str | None = None
    password: str | None = None
    password_file: str | None = None
    token: str | None = None
    ca_file: str | None = None
    vhost: str = "/"

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Connection:
        nodes = tuple(node.strip() for node in required(options, "nodes").split(",") if node.strip())
        if not nodes:
            raise OptionError("option 'nodes' lists no address")
        user, token = options.get("user") or None, options.get("token") or None
        password, password_file = options.get("password") or None, options.get("passwordFile") or None
        if password is not None and password_file is not None:
            raise OptionError("give option 'password' or 'passwordFile', not both")
        if token is not None and (user or password or password_file):
            raise OptionError("give option 'token' or 'user' with a password, not both")
        if user is None and (password or password_file):
            raise OptionError("option 'password'/'passwordFile' needs option 'user'")
        if user is not None and password is None and password_file is None:
            raise OptionError(f"option 'user' ({user}) needs 'password' or 'passwordFile'")
        vhost = options.get("vhost") or "/"
        return cls(nodes, user, password, password_file, token, options.get("caFile") or None, vhost)

    def __repr__(self) -> str:
        shown = {
            "nodes": self.nodes,
            "user": self.user,
            "password": HIDDEN if self.password else None,
            "password_file": self.password_file,
            "token": HIDDEN if self.token else None,
            "ca_file": self.ca_file,
            "vhost": None if self.vhost == "/" else self.vhost,
        }
        return "Connection(" + ", ".join(f"{k}={v!r}" for k, v in shown.items() if v is not None) + ")"

    def who(self) -> str:
        """Who the requests authenticate as, for error messages (never the secret)."""
        if self.user is not None:
            return f"user '{self.user}'"
        return "the token" if self.token is not None else "the environment's credentials (else guest:guest)"

    def client_arguments(self) -> dict[str, Any]:
        """Keyword arguments for Client/SyncClient; reads `passwordFile` and `caFile` here."""
        arguments: dict[str, Any] = {"timeout": REQUEST_TIMEOUT_S, "vhost": self.vhost}
        if self.user is not None:
            arguments["auth"] = (self.user, self._password())
        if self.token is not None:
            arguments["token"] = self.token
        if self.ca_file is not None:
            arguments["tls"] = ssl.create_default_context(cafile=self._readable(self.ca_file, "caFile"))
        return arguments

    def async_client(self) -> Client:
        return Client(list(self.nodes), **self.client_arguments())

    def sync_client(self) -> SyncClient:
        return SyncClient(list(self.nodes), **self.client_arguments())

    def _password(self) -> str:
        if self.password is not None:
            return self.password
        assert self.password_file is not None
        text = Path(self._readable(self.password_file, "passwordFile")).read_text(encoding="utf-8")
        return text.rstrip("\r\n")

    @staticmethod
    def _readable(path: str, option: str) -> str:
        if not Path(path).is_file():
            where = "it is read where each client runs: the driver and every executor"
            raise OptionError(f"option '{option}': no file {path!r} on host {socket.gethostname()} ({where})")
        return path
