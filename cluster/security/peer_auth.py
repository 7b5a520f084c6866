"""How nodes vouch for HTTP requests to each other without passwords: assertions signed with the secret.

A node that forwards a client's request, or calls another node on its own behalf (dead-lettering,
joining), sends `X-Quorumq-Node-Auth: v3;USER;TO;EXPIRES_MS;NONCE;BODY_SHA256;HMAC`. The HMAC, under a key
derived from the cluster secret, covers the user, the destination node's name, the expiry, the nonce, the
body's SHA-256, the method and the request target (path and query string exactly as sent), so an assertion
authorises that one request on that one node and nothing else. The receiving node trusts the named user
(or `NODE_PRINCIPAL` for a node's own calls) only if it is the destination, the HMAC checks and the
assertion is fresh (then, and only then, it reads the body and compares its digest: a caller without the
secret never makes a node read a body), and its nonce is new (`cluster.security.replay_guard`). The older
formats (`v2`, without the destination, and the first, without nonce, query or body) are refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import ssl
from dataclasses import dataclass
from typing import NamedTuple

import aiohttp
from yarl import URL

from cluster.config import NodeConfig
from cluster.security.tls import http_client_context
from cluster.steady_clock import STEP_HOLD_NS, steady_wall_ms

NODE_AUTH_HEADER = "X-Quorumq-Node-Auth"
NODE_PRINCIPAL = "@node"
ASSERTION_TTL_MS = 60_000
# A clock step is followed only once no assertion made before it can still be valid (the replay guard).
assert STEP_HOLD_NS > ASSERTION_TTL_MS * 1_000_000
ASSERTION_VERSION = "v3"
NONCE_BYTES = 16
DIGEST_IN_THREAD_BYTES = 1 << 20  # hashlib releases the GIL: larger bodies are hashed off the event loop


def derived_key(secret: str, purpose: str) -> bytes:
    """A key for one purpose (node assertions, bearer tokens), derived from the cluster secret."""
    return hmac.new(secret.encode(), b"quorumq:" + purpose.encode(), hashlib.sha256).digest()


def body_digest(body: bytes) -> str:
    """The SHA-256 (hex) of a request body, as assertions carry it."""
    return hashlib.sha256(body).hexdigest()


async def body_digest_off_loop(body: bytes) -> str:
    """`body_digest`, computed in a worker thread when the body is large."""
    if len(body) < DIGEST_IN_THREAD_BYTES:
        return body_digest(body)
    return await asyncio.to_thread(body_digest, body)


class Asserted(NamedTuple):
    """What a genuine assertion says: who, the nonce to accept once until `expires_ms`, and the
    `body_digest` the request's body must have."""

    user: str
    nonce: bytes
    expires_ms: int
    body_sha256: str


def _mac(secret: str, fields: tuple[str, ...], method: str, target: str) -> str:
    """The HMAC of an assertion's fields (user, destination, expiry, nonce, body digest) for one request."""
    parts = (ASSERTION_VERSION, *fields, method.upper(), target)
    return hmac.new(derived_key(secret, "node-auth"), "\x00".join(parts).encode(), hashlib.sha256).hexdigest()


def sign_assertion(
    secret: str, user: str, method: str, target: str, digest: str, now_ms: int | None = None, *, to: str
) -> str:
    """The header value asserting that `user` makes `method target` (path and query string as sent)
    on node `to` with a body whose `body_digest` is `digest`, valid for ASSERTION_TTL_MS, with a fresh
    nonce."""
    expires_ms = (steady_wall_ms() if now_ms is None else now_ms) + ASSERTION_TTL_MS
    fields = (user, to, str(expires_ms), os.urandom(NONCE_BYTES).hex(), digest)
    return ";".join((ASSERTION_VERSION, *fields, _mac(secret, fields, method, target)))


def verify_assertion(
    secret: str, value: str, method: str, target: str, now_ms: int | None = None, *, node: str
) -> Asserted | None:
    """What the header asserts when it is genuine, fresh and made for this method and target on `node`
    (the node checking it); else None. That the body has its digest, and that its nonce is new, are the
    caller's to check."""
    parts = value.split(";")
    if len(parts) != 7 or parts[0] != ASSERTION_VERSION:
        return None
    _, user, to, expires, nonce, digest, mac = parts
    if to != node or not user or not expires.isdigit() or len(expires) > 16 or len(nonce) != 2 * NONCE_BYTES:
        return None
    try:
        nonce_bytes = bytes.fromhex(nonce)
    except ValueError:
        return None
    now_ms = steady_wall_ms() if now_ms is None else now_ms
    if not now_ms <= int(expires) <= now_ms + 2 * ASSERTION_TTL_MS:
        return None
    expected = _mac(secret, (user, to, expires, nonce, digest), method, target)
    if not hmac.compare_digest(mac.encode(), expected.encode()):
        return None
    return Asserted(user, nonce_bytes, int(expires), digest)


class PlainHttpRefused(aiohttp.ClientError):
    """A node with `tls_http` on was about to send an assertion to a plain-HTTP URL."""


@dataclass(frozen=True)
class NodeCaller:
    """What a node needs to call other nodes' HTTP APIs: the secret and TLS trust."""

    secret: str
    ssl: ssl.SSLContext | None = None

    @classmethod
    def from_config(cls, config: NodeConfig) -> NodeCaller:
        """The caller of a configured node."""
        return cls(config.cluster_secret, http_client_context(config))

    async def headers(
        self, method: str, url: str | URL, body: bytes = b"", user: str = NODE_PRINCIPAL, *, to: str
    ) -> dict[str, str]:
        """Headers that authenticate exactly this call (`method url` with `body`) to node `to` as `user`
        (this node itself by default). With TLS configured, a plain-HTTP `url` is refused: an assertion
        never travels in the clear from a node that has TLS."""
        url = URL(url)
        if self.ssl is not None and url.scheme != "https":
            raise PlainHttpRefused(f"refusing to send a node assertion over plain HTTP to {url.origin()}")
        digest = await body_digest_off_loop(body)
        return {NODE_AUTH_HEADER: sign_assertion(self.secret, user, method, url.raw_path_qs, digest, to=to)}

    async def json_call(
        self, method: str, url: str, payload: object, *, to: str
    ) -> tuple[bytes, dict[str, str]]:
        """The body and headers of a call sending `payload` as JSON to node `to` at `url` as this node."""
        body = json.dumps(payload).encode()
        return body, {"Content-Type": "application/json", **await self.headers(method, url, body, to=to)}

    async def name_at(self, session: aiohttp.ClientSession, base_url: str) -> str:
        """The name of the node whose HTTP API is at `base_url`, as its public health answer gives it
        (what a node that knows only an address, such as a join seed, makes its assertion for)."""
        async with session.get(f"{base_url.rstrip('/')}/api/health", ssl=self.ssl or True) as answer:
            health = await answer.json(content_type=None)
        name = health.get("node") if isinstance(health, dict) else None
        if not isinstance(name, str) or not name:
            raise aiohttp.ClientPayloadError(f"{base_url} does not name its node")
        return name
