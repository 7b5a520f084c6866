"""How nodes vouch for HTTP requests to each other without passwords: assertions signed with the secret.

A node that forwards a client's request, or calls another node on its own behalf (dead-lettering,
joining), sends `X-Quorumq-Node-Auth: USER;EXPIRES_MS;HMAC`. The HMAC covers the user, the expiry, the
method and the path, under a key derived from the cluster secret; the receiving node trusts the named
user (or `NODE_PRINCIPAL` for a node's own calls) only if the HMAC checks and the assertion is fresh.
"""

from __future__ import annotations

import hashlib
import hmac
import ssl
from dataclasses import dataclass

from cluster.config import NodeConfig
from cluster.steady_clock import steady_wall_ms
from cluster.tls import http_client_context

NODE_AUTH_HEADER = "X-Quorumq-Node-Auth"
NODE_PRINCIPAL = "@node"
ASSERTION_TTL_MS = 60_000


def derived_key(secret: str, purpose: str) -> bytes:
    """A key for one purpose (node assertions, bearer tokens), derived from the cluster secret."""
    return hmac.new(secret.encode(), b"quorumq:" + purpose.encode(), hashlib.sha256).digest()


def _mac(key: bytes, user: str, expires_ms: int, method: str, path: str) -> str:
    message = "\x00".join((user, str(expires_ms), method.upper(), path)).encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign_assertion(secret: str, user: str, method: str, path: str, now_ms: int | None = None) -> str:
    """The header value asserting that `user` makes `method path`, valid for ASSERTION_TTL_MS."""
    now_ms = steady_wall_ms() if now_ms is None else now_ms
    expires_ms = now_ms + ASSERTION_TTL_MS
    return f"{user};{expires_ms};{_mac(derived_key(secret, 'node-auth'), user, expires_ms, method, path)}"


def verify_assertion(
    secret: str, value: str, method: str, path: str, now_ms: int | None = None
) -> str | None:
    """The asserted user when the header is genuine, fresh and made for this method and path; else None."""
    user, _, rest = value.partition(";")
    expires, _, mac = rest.partition(";")
    if not user or not expires.isdigit() or len(expires) > 16:
        return None
    now_ms = steady_wall_ms() if now_ms is None else now_ms
    if not now_ms <= int(expires) <= now_ms + 2 * ASSERTION_TTL_MS:
        return None
    expected = _mac(derived_key(secret, "node-auth"), user, int(expires), method, path)
    return user if hmac.compare_digest(mac.encode(), expected.encode()) else None


@dataclass(frozen=True)
class NodeCaller:
    """What a node needs to call other nodes' HTTP APIs on its own behalf: the secret and TLS trust."""

    secret: str
    ssl: ssl.SSLContext | None = None

    @classmethod
    def from_config(cls, config: NodeConfig) -> NodeCaller:
        """The caller of a configured node."""
        return cls(config.cluster_secret, http_client_context(config))

    def headers(self, method: str, path: str) -> dict[str, str]:
        """Headers that authenticate one call as this node."""
        return {NODE_AUTH_HEADER: sign_assertion(self.secret, NODE_PRINCIPAL, method, path)}
