"""What a route requires of its caller (`Access`), and who an authenticated caller is and what it may do
(`Principal`): RabbitMQ's configure/write/read patterns per vhost, matched against a queue's or an
exchange's name in it, and the administrator tag."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from cluster.security.peer_auth import NODE_PRINCIPAL
from cluster.security.users import pattern_allows
from metadata_state.records import FULL_ACCESS, NO_PERMISSIONS, Permissions, UserRecord
from metadata_state.vhost_names import split

EVERYTHING: Permissions = (FULL_ACCESS, FULL_ACCESS, FULL_ACCESS)


class Access(enum.Enum):
    """What a route requires of the caller."""

    PUBLIC = "public"
    METRICS = "metrics"  # public when `metrics_public`, else any authenticated user
    AUTHENTICATED = "authenticated"
    ANY_QUEUE_PERMISSION = "any"  # configure, write or read on the queue
    # as ANY_QUEUE_PERMISSION; when the one-segment path names a vhost, AUTHENTICATED (its listing)
    QUEUE_OR_VHOST = "any, or a vhost's listing"
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
    permissions: Mapping[str, Permissions] = field(default_factory=dict)
    """The configure, write and read patterns by vhost (none in a vhost not named)."""
    expires_ms: int | None = None  # when the credentials expire (a bearer token's expiry), if ever
    everywhere: bool = False  # every right in every vhost

    @classmethod
    def of(cls, record: UserRecord, expires_ms: int | None = None) -> Principal:
        """The rights a user record grants, to credentials valid until `expires_ms` (None: no end)."""
        return cls(record.name, record.is_administrator, record.all_permissions(), expires_ms)

    @classmethod
    def superuser(cls, name: str) -> Principal:
        """Full rights (the loopback guest, a node acting on its own behalf)."""
        return cls(name, True, everywhere=True)

    def patterns_in(self, vhost: str) -> Permissions:
        """The configure, write and read patterns in `vhost`."""
        return EVERYTHING if self.everywhere else self.permissions.get(vhost, NO_PERMISSIONS)

    def holds_rights_in(self, vhost: str) -> bool:
        """Whether this principal was granted anything in `vhost` (a pattern that is not "")."""
        return any(self.patterns_in(vhost))

    def lists(self, queue: str) -> bool:
        """Whether `GET /api/queues` shows `queue` (a `qualified` name) to this principal: administrators
        see every queue, other users those they hold any permission on."""
        return self.administrator or self.may(Access.ANY_QUEUE_PERMISSION, queue)

    def lists_in(self, vhost: str, name: str) -> bool:
        """As `lists`, for the exchange or queue `name` of `vhost`."""
        return self.administrator or self.may_in(Access.ANY_QUEUE_PERMISSION, vhost, name)

    def may(self, access: Access, queue: str | None) -> bool:
        """Whether this principal passes `access` (on `queue`, a `qualified` name, for per-queue rules)."""
        if queue is None:
            return self._may_without_resource(access)
        return self.may_in(access, *split(queue))

    def may_in(self, access: Access, vhost: str, name: str) -> bool:
        """Whether this principal passes `access` on the queue or exchange `name` of `vhost`."""
        if access in _WITHOUT_RESOURCE:
            return self._may_without_resource(access)
        configure, write, read = self.patterns_in(vhost)
        if access is Access.ANY_QUEUE_PERMISSION:
            return any(pattern_allows(p, name) for p in (configure, write, read))
        if access is Access.CONFIGURE_ADMIN:
            return self.administrator and pattern_allows(configure, name)
        pattern = {Access.CONFIGURE: configure, Access.WRITE: write, Access.READ: read}[access]
        return pattern_allows(pattern, name)

    def _may_without_resource(self, access: Access) -> bool:
        if access in (Access.PUBLIC, Access.METRICS, Access.AUTHENTICATED):
            return True
        if access is Access.ADMINISTRATOR:
            return self.administrator
        if access is Access.NODE:
            return self.name == NODE_PRINCIPAL
        return False


_WITHOUT_RESOURCE = (Access.PUBLIC, Access.METRICS, Access.AUTHENTICATED, Access.ADMINISTRATOR, Access.NODE)
