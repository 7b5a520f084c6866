"""Bearer tokens: `qq1.PAYLOAD.MAC`, signed with a key derived from the cluster secret.

The payload names the user, the expiry and the generation of the user's password hash, so any node can
check a token without shared state, and changing the password or deleting the user revokes it. One
token is revoked (a log-out) by each node's `RevokedTokens`, in memory until it expires (decision 0020).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Container, Mapping
from typing import NamedTuple

import msgpack

from cluster.security.peer_auth import ASSERTION_TTL_MS, derived_key
from cluster.security.users import password_generation
from cluster.steady_clock import steady_wall_ms
from metadata_state.records import UserRecord

PREFIX = "qq1"
DEFAULT_TTL_S = 3600
MAX_TTL_S = 7 * 24 * 3600
MAX_TOKEN_CHARS = 1024
MAX_REVOKED = 100_000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: str, payload: str) -> str:
    return _b64(hmac.new(derived_key(secret, "token"), payload.encode(), hashlib.sha256).digest())


class TokenClaims(NamedTuple):
    """What a genuine token says: whose it is and until when (ms since the epoch)."""

    name: str
    expires_ms: int


def issue_token(
    secret: str, record: UserRecord, ttl_s: int, now_s: float | None = None, not_after_ms: int | None = None
) -> tuple[str, int]:
    """A token for `record` valid `ttl_s` seconds but not after `not_after_ms` (the expiry of the token
    that asked for it), and its expiry in ms since the epoch."""
    now_s = steady_wall_ms() / 1000 if now_s is None else now_s
    expires_ms = int((now_s + ttl_s) * 1000)
    if not_after_ms is not None:
        expires_ms = min(expires_ms, not_after_ms)
    payload = _b64(msgpack.packb([record.name, expires_ms, password_generation(record.password_hash)]))
    return f"{PREFIX}.{payload}.{_mac(secret, payload)}", expires_ms


def verify_token(
    secret: str,
    token: str,
    users: Mapping[str, UserRecord],
    now_s: float | None = None,
    revoked: Container[str] = (),
) -> TokenClaims | None:
    """The claims of a genuine, unexpired, unrevoked token (not among `revoked`) that expires within
    MAX_TTL_S of `now_s` (and the 60 s nodes' clocks may be apart); None for anything else."""
    if len(token) > MAX_TOKEN_CHARS or token in revoked:
        return None
    prefix, _, rest = token.partition(".")
    payload, _, mac = rest.partition(".")
    if prefix != PREFIX or not hmac.compare_digest(mac.encode(), _mac(secret, payload).encode()):
        return None
    try:
        name, expires_ms, generation = msgpack.unpackb(_unb64(payload), raw=False)
    except (ValueError, TypeError, binascii.Error, msgpack.UnpackException):
        return None
    now_s = steady_wall_ms() / 1000 if now_s is None else now_s
    record = users.get(name) if isinstance(name, str) else None
    if record is None or not isinstance(expires_ms, int) or expires_ms <= now_s * 1000:
        return None
    if expires_ms > (now_s + MAX_TTL_S) * 1000 + ASSERTION_TTL_MS:  # minted by a clock too far ahead
        return None
    if generation != password_generation(record.password_hash):
        return None
    return TokenClaims(name, expires_ms)


class RevocationsFull(Exception):
    """`MAX_REVOKED` unexpired tokens are revoked already on this node."""


class RevokedTokens:
    """The tokens revoked on this node, each kept until it expires (then it is refused anyway)."""

    def __init__(self) -> None:
        self._expiries: dict[str, int] = {}

    def __contains__(self, token: object) -> bool:
        return token in self._expiries

    def revoke(self, token: str, expires_ms: int, now_ms: int | None = None) -> None:
        """Refuse `token` from now on, until `expires_ms`; RevocationsFull when `MAX_REVOKED` unexpired
        tokens are revoked already."""
        if len(self._expiries) >= MAX_REVOKED:  # forget the expired ones only when full: revoking is cheap
            now_ms = steady_wall_ms() if now_ms is None else now_ms
            self._expiries = {t: e for t, e in self._expiries.items() if e > now_ms}
        if len(self._expiries) >= MAX_REVOKED and token not in self._expiries:
            raise RevocationsFull(f"{MAX_REVOKED} unexpired tokens are revoked on this node already")
        self._expiries[token] = expires_ms
