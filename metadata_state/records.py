"""What the metadata holds: the nodes of the cluster, the declared queues, the users, the policies, the
exchanges and their bindings."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from metadata_state.vhost_names import DEFAULT_VHOST

ADMINISTRATOR = "administrator"
FULL_ACCESS = ".*"
NO_ACCESS = ""
# The fence of a queue no fenced `SetMembers` wrote yet, and of a `set_members` logged without one.
UNFENCED = (0, 0)


@dataclass(frozen=True)
class NodeInfo:
    """A cluster member, where to reach it and the incarnation (database) it registered from ("" when
    registered before incarnations existed); `earlier_incarnation` is the one that incarnation replaced
    ("" for the node's first: its database was never wiped, as far as the metadata knows)."""

    name: str
    http: str
    raft: str
    incarnation: str = ""
    earlier_incarnation: str = ""

    def same_registration(self, other: NodeInfo) -> bool:
        """Whether `other` registers the same addresses and incarnation."""
        return (self.name, self.http, self.raft, self.incarnation) == (
            other.name,
            other.http,
            other.raft,
            other.incarnation,
        )


@dataclass
class QueueInfo:
    """A declared queue: its Raft group id, canonical arguments and intended replica set.

    `initial_members` is the membership the group was created with: an initial member that never held
    the group bootstraps it as a voter, any other node starts it empty and waits for the leader. A
    membership change logged without a fence (by a version before fences) empties it, as one did until
    snapshot version 6. `members_fence` is the fence of the `SetMembers` that wrote `members`
    (`UNFENCED` until one did). `initial_incarnations` are the registered incarnations of the initial
    members when the queue was declared (members registered without one are left out): the group's
    bootstrap configuration.
    """

    name: str
    group: str
    arguments: dict[str, Any]
    members: list[str]
    created_ms: int
    initial_members: list[str] = field(default_factory=list)
    members_fence: list[int] = field(default_factory=lambda: list(UNFENCED))
    initial_incarnations: dict[str, str] = field(default_factory=dict)

    @property
    def membership_changed(self) -> bool:
        """Whether a fenced `SetMembers` wrote `members` (the initial members may no longer be them)."""
        return self.members_fence != list(UNFENCED)


Permissions = tuple[str, str, str]
"""A user's configure, write and read patterns in one vhost."""
NO_PERMISSIONS: Permissions = (NO_ACCESS, NO_ACCESS, NO_ACCESS)


@dataclass
class UserRecord:
    """One user: the encoded password hash, tags, and per vhost three permission regexes
    (`cluster.security.users` hashes passwords and matches patterns; the metadata only records them).
    `configure`, `write` and `read` are the patterns in DEFAULT_VHOST (as before vhosts);
    `vhost_permissions` those in other vhosts, `[configure, write, read]` by vhost."""

    name: str
    password_hash: str
    tags: list[str] = field(default_factory=list)
    configure: str = NO_ACCESS
    write: str = NO_ACCESS
    read: str = NO_ACCESS
    vhost_permissions: dict[str, list[str]] = field(default_factory=dict)

    @property
    def is_administrator(self) -> bool:
        """True for users tagged `administrator`."""
        return ADMINISTRATOR in self.tags

    def all_permissions(self) -> dict[str, Permissions]:
        """The user's patterns by vhost (those it was given: DEFAULT_VHOST's always), DEFAULT_VHOST's
        first, then by vhost name."""
        given = {DEFAULT_VHOST: (self.configure, self.write, self.read)}
        for vhost in sorted(self.vhost_permissions):
            patterns = self.vhost_permissions[vhost]
            given[vhost] = (patterns[0], patterns[1], patterns[2])
        return given


@dataclass
class PolicyRecord:
    """A policy of `vhost`: its queues whose name `pattern` matches apply its `definition` (policy keys,
    as `queue_state.policy` reads them); of several matching, the one of highest `priority`, then of the
    least name (`cluster.queues.policies` matches and checks them; the metadata only records them)."""

    name: str
    pattern: str
    definition: dict[str, Any]
    priority: int = 0
    vhost: str = DEFAULT_VHOST


@dataclass(frozen=True)
class PolicySet:
    """The metadata's policies as queues apply them: the users' (`user`) and the operator policies
    (`operator`, whose limits apply over the others')."""

    user: tuple[PolicyRecord, ...] = ()
    operator: tuple[PolicyRecord, ...] = ()


EXCHANGE_TYPES = ("direct", "fanout", "topic", "headers")
BUILTIN_EXCHANGES = {
    "amq.direct": "direct",
    "amq.fanout": "fanout",
    "amq.topic": "topic",
    "amq.headers": "headers",
    "amq.match": "headers",
}
"""The exchanges every vhost has without a declare, as RabbitMQ's (the default exchange, "", routes by
queue name and takes no bindings)."""
QUEUE_DESTINATION = "queue"
EXCHANGE_DESTINATION = "exchange"


@dataclass
class VhostRecord:
    """A virtual host: its own namespace of queues, exchanges, bindings and policies, and the permissions
    users hold in it (the metadata records those other than DEFAULT_VHOST, which every cluster has)."""

    name: str
    description: str = ""
    tags: list[str] = field(default_factory=list)


@dataclass
class ExchangeRecord:
    """A declared exchange: its `type` (one of EXCHANGE_TYPES) and RabbitMQ's flags; `arguments` may
    name an `alternate-exchange` for what it cannot route. An exchange is replicated whether `durable` or
    not (the flag is kept for the clients that declare it); an `auto_delete` one goes once its last
    binding as a source does; an `internal` one takes publishes only from other exchanges."""

    vhost: str
    name: str
    type: str
    durable: bool = True
    auto_delete: bool = False
    internal: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BindingRecord:
    """A binding from exchange `source` to a queue or exchange (`destination_type`) `destination`, with a
    routing key and arguments (a headers binding's tests). Two binds with the same `key` are one binding."""

    vhost: str
    source: str
    destination: str
    destination_type: str
    routing_key: str
    arguments: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def properties_key(self) -> str:
        """RabbitMQ's name for the binding among those of its source and destination: the routing key,
        followed by `~` and a digest of the arguments when it has any; `~` alone for neither (a path
        segment cannot be empty). Two bindings may share one only when a routing key itself contains
        `~` (`key`, not this, tells bindings apart)."""
        if not self.arguments:
            return self.routing_key or "~"
        return f"{self.routing_key}~{self._arguments_digest}"

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        """What identifies the binding: its vhost, source, destination, routing key and arguments."""
        digest = self._arguments_digest if self.arguments else ""
        return (self.vhost, self.source, self.destination_type, self.destination, self.routing_key, digest)

    @property
    def _arguments_digest(self) -> str:
        canonical = json.dumps(self.arguments, sort_keys=True, separators=(",", ":"), default=repr)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]
