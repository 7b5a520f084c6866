"""Whether the credentials a streaming connection was opened with still stand, and what they allow now.

A stream outlives the request that authenticated it, so it asks again: at each operation, each time the
node applies a change of the metadata (users, permissions), and when its credentials expire
(`StreamConnection`). Credentials stop standing when they expire (a bearer token), when the user is
deleted, or when its password changes (which revokes its tokens, and its Basic credentials with it).
"""

from __future__ import annotations

from api.access import Principal
from api.auth import Unauthenticated, vouched_principal
from cluster.config import NodeConfig
from cluster.metadata.metadata_view import MetadataView
from cluster.security.users import password_generation
from cluster.steady_clock import steady_wall_ms

CREDENTIALS_GONE = 4401
"""WebSocket close code: the connection's credentials expired, or its user was deleted or changed
password."""
PERMISSION_REVOKED = 4403
"""WebSocket close code: the user may no longer read the queue of one of the connection's consumers."""


class StreamStanding:
    """The standing of `caller`, who opened a stream, as the metadata this node applied says now."""

    def __init__(self, config: NodeConfig, metadata: MetadataView, caller: Principal) -> None:
        self._config = config
        self._metadata = metadata
        self._caller = caller
        self._generation = self._password_generation()

    @property
    def expires_ms(self) -> int | None:
        """When the credentials expire (ms since the epoch, by `steady_wall_ms`), if ever."""
        return self._caller.expires_ms

    def current(self) -> Principal:
        """The caller with the permissions its user has now; Unauthenticated once its credentials no
        longer stand."""
        expires = self._caller.expires_ms
        if expires is not None and steady_wall_ms() >= expires:
            raise Unauthenticated("the credentials of this connection expired")
        now = vouched_principal(self._config, self._metadata, self._caller.name)
        if self._password_generation() != self._generation:
            raise Unauthenticated("the password of this connection's user changed")
        return now

    def _password_generation(self) -> str | None:
        record = self._metadata.users.get(self._caller.name)
        return None if record is None else password_generation(record.password_hash)
