"""What a route requires of its caller (`Access`), and who an authenticated caller is and what it may do
(`Principal`): RabbitMQ's configure/write/read patterns per queue and the administrator tag."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cluster.security.peer_auth import NODE_PRINCIPAL
from cluster.security.users import pattern_allows
from metadata_state.records import FULL_ACCESS, UserRecord


class Access(enum.Enum):
    """What a route requires of the caller."""

    PUBLIC = "public"
    METRICS = "metrics"  # public when `metrics_public`, else any authenticated user
    AUTHENTICATED = "authenticated"
    ANY_QUEUE_PERMISSION = "any"  # configure, write or read on the queue
    CONFIGURE = "configure"
    WRITE = "write"
    READ = "read"
    CONFIGURE_ADMIN = "configure+administrator"
    ADMINISTRATOR = "administrator"
    NODE = "node"  # a node's own call: its assertion as NODE_PRINCIPAL, which only the cluster secret makes


@dataclass(frozen=True)
class Principal:
    """An authenticated caller and its rights."""

    name: str
    administrator: bool
    configure: str = ""
    write: str = ""
    read: str = ""
    expires_ms: int | None = None  # when the credentials expire (a bearer token's expiry), if ever

    @classmethod
    def of(cls, record: UserRecord, expires_ms: int | None = None) -> Principal:
        """The rights a user record grants, to credentials valid until `expires_ms` (None: no end)."""
        return cls(
            record.name, record.is_administrator, record.configure, record.write, record.read, expires_ms
        )

    @classmethod
    def superuser(cls, name: str) -> Principal:
        """Full rights (the loopback guest, a node acting on its own behalf)."""
        return cls(name, True, FULL_ACCESS, FULL_ACCESS, FULL_ACCESS)

    def lists(self, queue: str) -> bool:
        """Whether `GET /api/queues` shows `queue` to this principal: administrators see every queue,
        other users those they hold any permission on."""
        return self.administrator or self.may(Access.ANY_QUEUE_PERMISSION, queue)

    def may(self, access: Access, queue: str | None) -> bool:
        """Whether this principal passes `access` (on `queue` for per-queue rules)."""
        if access in (Access.PUBLIC, Access.METRICS, Access.AUTHENTICATED):
            return True
        if access is Access.ADMINISTRATOR:
            return self.administrator
        if access is Access.NODE:
            return self.name == NODE_PRINCIPAL
        if queue is None:
            return False
        if access is Access.ANY_QUEUE_PERMISSION:
            return any(pattern_allows(p, queue) for p in (self.configure, self.write, self.read))
        if access is Access.CONFIGURE_ADMIN:
            return self.administrator and pattern_allows(self.configure, queue)
        return pattern_allows(getattr(self, access.value), queue)
