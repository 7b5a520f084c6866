"""The metadata machine: applies one command to the node registry, the queues, the users, the policies,
and the exchanges with their bindings.

Deterministic like every state machine here: placement, creation times and password hashes are chosen
by the proposer and arrive inside the command; `apply` only checks and records them, and a command it
refuses changes nothing.

A queue's member list is written by the leader of the queue's group (`SetMembers`), each list with a
fence (term, sequence): the group's term in which that leader decided it and the rank of the decision
among that leader's decisions. A list whose fence is older than the applied one is refused, so a
deposed leader cannot undo what its successor decided (docs/decisions/0007-members-fence.md).

Exchanges and bindings follow RabbitMQ's rules: the default exchange ("") is implicit and takes no
bindings, the BUILTIN_EXCHANGES exist in every vhost without a declare, deleting an exchange or a queue
removes the bindings from and to it, and an `auto_delete` exchange goes once it is the source of no
binding after one was removed.

Virtual hosts (docs/decisions/0029-the-vhost-is-part-of-a-name.md): DEFAULT_VHOST always exists, others
are declared. A queue is keyed by its `qualified` name, and is declared only in a vhost that exists; a
queue of DEFAULT_VHOST may not take a vhost's name, nor a vhost a queue of DEFAULT_VHOST's (a one-segment
`/api/queues/{x}` names either). A vhost is deleted only while it holds no queue, with its exchanges,
bindings, policies and the permissions in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias, assert_never

from metadata_state.commands import (
    Bind,
    BootstrapUsers,
    ClearPermissions,
    ClearPolicy,
    Command,
    Declare,
    DeclareExchange,
    DeclareVhost,
    Delete,
    DeleteExchange,
    DeleteUser,
    DeleteVhost,
    ForgetNode,
    PutUser,
    RegisterNode,
    SetArguments,
    SetMembers,
    SetPermissions,
    SetPolicy,
    Unbind,
)
from metadata_state.records import (
    ADMINISTRATOR,
    BUILTIN_EXCHANGES,
    EXCHANGE_DESTINATION,
    EXCHANGE_TYPES,
    FULL_ACCESS,
    QUEUE_DESTINATION,
    BindingRecord,
    ExchangeRecord,
    NodeInfo,
    PolicyRecord,
    QueueInfo,
    UserRecord,
    VhostRecord,
)
from metadata_state.replies import (
    Conflict,
    Created,
    Exists,
    InUse,
    Invalid,
    NotFound,
    Ok,
    Reply,
    Stale,
    Updated,
)
from metadata_state.vhost_names import DEFAULT_VHOST, SEPARATOR, qualified, split, vhost_of

BindingKey: TypeAlias = tuple[str, str, str, str, str, str]
"""`BindingRecord.key`: vhost, source, destination type, destination, routing key, arguments digest."""


@dataclass
class MetadataMachine:
    """What the metadata group replicates."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    next_group: int = 1
    users: dict[str, UserRecord] = field(default_factory=dict)
    users_initialised: bool = False
    policies: dict[str, PolicyRecord] = field(default_factory=dict)
    """The policies by `qualified` name (vhost and name), as `operator_policies`."""
    policies_revision: int = 0
    operator_policies: dict[str, PolicyRecord] = field(default_factory=dict)
    exchanges: dict[tuple[str, str], ExchangeRecord] = field(default_factory=dict)
    """Declared exchanges by (vhost, name); the builtin ones are implicit (`exchange`)."""
    bindings: dict[BindingKey, BindingRecord] = field(default_factory=dict)
    routing_revision: int = 0
    """How many applied commands changed the exchanges or the bindings."""
    vhosts: dict[str, VhostRecord] = field(default_factory=dict)
    """The declared vhosts by name (DEFAULT_VHOST is implicit: `has_vhost`)."""

    def apply(self, command: Command) -> Reply:
        """Apply one command and return its reply."""
        match command:
            case RegisterNode():
                return self._register_node(command)
            case ForgetNode():
                return self._forget_node(command)
            case Declare():
                return self._declare(command)
            case Delete():
                return self._delete(command)
            case SetMembers():
                return self._set_members(command)
            case SetArguments():
                return self._set_arguments(command)
            case BootstrapUsers():
                return self._bootstrap_users(command)
            case PutUser():
                return self._put_user(command)
            case DeleteUser():
                return self._delete_user(command)
            case SetPermissions():
                return self._set_permissions(command)
            case SetPolicy():
                return self._set_policy(command)
            case ClearPolicy():
                return self._clear_policy(command)
            case DeclareExchange():
                return self._declare_exchange(command)
            case DeleteExchange():
                return self._delete_exchange(command)
            case Bind():
                return self._bind(command)
            case Unbind():
                return self._unbind(command)
            case DeclareVhost():
                return self._declare_vhost(command)
            case DeleteVhost():
                return self._delete_vhost(command)
            case ClearPermissions():
                return self._clear_permissions(command)
            case _:
                assert_never(command)

    def has_vhost(self, vhost: str) -> bool:
        """Whether `vhost` exists (DEFAULT_VHOST always does)."""
        return vhost == DEFAULT_VHOST or vhost in self.vhosts

    def exchange(self, vhost: str, name: str) -> ExchangeRecord | None:
        """Exchange `name` of `vhost`: the declared one, or a builtin's record (every vhost has them);
        None when there is none, and for the default exchange ("")."""
        declared = self.exchanges.get((vhost, name))
        if declared is not None:
            return declared
        kind = BUILTIN_EXCHANGES.get(name) if self.has_vhost(vhost) else None
        return None if kind is None else ExchangeRecord(vhost, name, kind)

    def _register_node(self, command: RegisterNode) -> Reply:
        """Record a node's addresses and incarnation; a new incarnation where another was registered
        remembers the one it replaced (its database was wiped or set aside)."""
        before = self.nodes.get(command.node)
        earlier = before.earlier_incarnation if before is not None else ""
        if before is not None and before.incarnation and command.incarnation not in ("", before.incarnation):
            earlier = before.incarnation
        self.nodes[command.node] = NodeInfo(
            command.node, command.http, command.raft, command.incarnation, earlier
        )
        return Ok()

    def _forget_node(self, command: ForgetNode) -> Reply:
        if self.nodes.pop(command.node, None) is None:
            return NotFound(f"unknown node {command.node!r}")
        return Ok()

    def _declare(self, command: Declare) -> Reply:
        name = command.queue
        existing = self.queues.get(name)
        if existing is not None:
            if existing.arguments == command.arguments:
                return Exists(existing.group)
            return Conflict(existing.arguments)
        vhost = vhost_of(name)
        if not self.has_vhost(vhost):
            return NotFound(f"no vhost {vhost!r}")
        if name in self.vhosts:
            return Invalid(f"{name!r} names a vhost: a queue of {DEFAULT_VHOST!r} cannot take it")
        if not command.members:
            return Invalid("a queue needs at least one member")
        members = list(command.members)
        info = QueueInfo(
            name, f"q{self.next_group}.{name}", dict(command.arguments), members, command.created_ms
        )
        info.initial_members = list(members)
        info.initial_incarnations = {m: i for m in members if (i := self._incarnation(m))}
        self.next_group += 1
        self.queues[name] = info
        return Created(info.group)

    def _incarnation(self, node: str) -> str:
        info = self.nodes.get(node)
        return info.incarnation if info is not None else ""

    def _queue(self, name: str, group: str) -> QueueInfo | NotFound:
        existing = self.queues.get(name)
        if existing is None or existing.group != group:
            return NotFound(f"no queue {name!r} with group {group!r}")
        return existing

    def _delete(self, command: Delete) -> Reply:
        existing = self._queue(command.queue, command.group)
        if isinstance(existing, NotFound):
            return existing
        del self.queues[command.queue]
        vhost, name = split(command.queue)
        if self._remove_bindings(
            lambda b: (b.vhost, b.destination_type, b.destination) == (vhost, QUEUE_DESTINATION, name)
        ):
            self.routing_revision += 1
        return Ok()

    def _set_members(self, command: SetMembers) -> Reply:
        """Record a queue's member list unless its fence is older than the applied one (`Stale`); one
        logged without a fence counts as UNFENCED, so it applies as it always did while no fenced list
        was applied to the queue, and forgets the initial members as it always did (a fenced one keeps
        them: an initial member that never held the group still bootstraps it, `QueueHosting`)."""
        existing = self._queue(command.queue, command.group)
        if isinstance(existing, NotFound):
            return existing
        fence = list(command.fence)
        if fence < existing.members_fence:
            applied = existing.members_fence
            return Stale(
                f"the members of {command.queue!r} at fence {fence} are older than those at {applied}"
            )
        existing.members = list(command.members)
        existing.members_fence = fence
        if not existing.membership_changed:
            existing.initial_members = []
            existing.initial_incarnations = {}
        return Ok()

    def _set_arguments(self, command: SetArguments) -> Reply:
        existing = self._queue(command.queue, command.group)
        if isinstance(existing, NotFound):
            return existing
        existing.arguments = dict(command.arguments)
        return Ok()

    def _bootstrap_users(self, command: BootstrapUsers) -> Reply:
        if self.users_initialised:
            return Exists()
        self.users_initialised = True
        if command.user:
            access = FULL_ACCESS
            self.users[command.user] = UserRecord(
                command.user, command.password_hash, [ADMINISTRATOR], access, access, access
            )
        return Created()

    def _put_user(self, command: PutUser) -> Reply:
        existing = self.users.get(command.user)
        if existing is None:
            if not command.password_hash:
                return Invalid(f"a new user needs a password ({command.user!r})")
            self.users[command.user] = UserRecord(command.user, command.password_hash, list(command.tags))
            return Created()
        existing.tags = list(command.tags)
        existing.password_hash = command.password_hash or existing.password_hash
        return Updated()

    def _delete_user(self, command: DeleteUser) -> Reply:
        if self.users.pop(command.user, None) is None:
            return NotFound(f"no user {command.user!r}")
        return Ok()

    def _set_permissions(self, command: SetPermissions) -> Reply:
        existing = self.users.get(command.user)
        if existing is None:
            return NotFound(f"no user {command.user!r}")
        if not self.has_vhost(command.vhost):
            return NotFound(f"no vhost {command.vhost!r}")
        if command.vhost == DEFAULT_VHOST:
            existing.configure, existing.write, existing.read = command.configure, command.write, command.read
        else:
            existing.vhost_permissions[command.vhost] = [command.configure, command.write, command.read]
        return Ok()

    def _clear_permissions(self, command: ClearPermissions) -> Reply:
        existing = self.users.get(command.user)
        if existing is None:
            return NotFound(f"no user {command.user!r}")
        if command.vhost == DEFAULT_VHOST:
            existing.configure = existing.write = existing.read = ""
        elif existing.vhost_permissions.pop(command.vhost, None) is None:
            return NotFound(f"user {command.user!r} has no permissions in vhost {command.vhost!r}")
        return Ok()

    def _declare_vhost(self, command: DeclareVhost) -> Reply:
        """Create a vhost, or update a declared one's description and tags."""
        name = command.vhost
        if name == DEFAULT_VHOST:
            return Invalid(f"vhost {DEFAULT_VHOST!r} always exists")
        if name in self.queues:
            return Invalid(f"{name!r} names a queue of {DEFAULT_VHOST!r}: a vhost cannot take it")
        existed = name in self.vhosts
        self.vhosts[name] = VhostRecord(name, command.description, list(command.tags))
        return Updated() if existed else Created()

    def _delete_vhost(self, command: DeleteVhost) -> Reply:
        """Delete a vhost holding no queue, with everything else of it."""
        vhost = command.vhost
        if vhost == DEFAULT_VHOST:
            return Invalid(f"vhost {DEFAULT_VHOST!r} cannot be deleted")
        if vhost not in self.vhosts:
            return NotFound(f"no vhost {vhost!r}")
        if any(vhost_of(name) == vhost for name in self.queues):
            return InUse(f"vhost {vhost!r} holds queues")
        del self.vhosts[vhost]
        for user in self.users.values():
            user.vhost_permissions.pop(vhost, None)
        for policies in (self.policies, self.operator_policies):
            gone = [key for key, policy in policies.items() if policy.vhost == vhost]
            for key in gone:
                del policies[key]
            if gone:
                self.policies_revision += 1
        routing = [exchange for exchange in self.exchanges if exchange[0] == vhost]
        for exchange in routing:
            del self.exchanges[exchange]
        if self._remove_bindings(lambda b: b.vhost == vhost) or routing:
            self.routing_revision += 1
        return Ok()

    def _set_policy(self, command: SetPolicy) -> Reply:
        """Create or replace a policy (an operator policy: `operator_policies`); every change of either
        counts one more revision, which a
        queue applies its policy under, so that a leader whose metadata lags cannot bring back an older
        choice (`queue_state/policy.py`)."""
        if not self.has_vhost(command.vhost):
            return NotFound(f"no vhost {command.vhost!r}")
        policies = self.operator_policies if command.operator else self.policies
        key = qualified(command.vhost, command.policy)
        existed = key in policies
        policies[key] = PolicyRecord(
            command.policy, command.pattern, dict(command.definition), command.priority, command.vhost
        )
        self.policies_revision += 1
        return Updated() if existed else Created()

    def _clear_policy(self, command: ClearPolicy) -> Reply:
        policies = self.operator_policies if command.operator else self.policies
        if policies.pop(qualified(command.vhost, command.policy), None) is None:
            return NotFound(f"no {'operator ' if command.operator else ''}policy {command.policy!r}")
        self.policies_revision += 1
        return Ok()

    def _declare_exchange(self, command: DeclareExchange) -> Reply:
        """Create an exchange; one of that name already (builtin or declared) `Exists` with the same
        definition, else is a `Conflict` naming its own."""
        if not command.exchange:
            return Invalid("the default exchange cannot be declared")
        if not self.has_vhost(command.vhost):
            return NotFound(f"no vhost {command.vhost!r}")
        if command.type not in EXCHANGE_TYPES:
            return Invalid(f"no exchange type {command.type!r} (one of {', '.join(EXCHANGE_TYPES)})")
        declared = ExchangeRecord(
            command.vhost,
            command.exchange,
            command.type,
            command.durable,
            command.auto_delete,
            command.internal,
            dict(command.arguments),
        )
        existing = self.exchange(command.vhost, command.exchange)
        if existing is not None:
            definition = _definition(existing)
            return Exists() if definition == _definition(declared) else Conflict(definition)
        self.exchanges[(command.vhost, command.exchange)] = declared
        self.routing_revision += 1
        return Created()

    def _delete_exchange(self, command: DeleteExchange) -> Reply:
        """Delete a declared exchange with every binding from or to it (`if_unused`: only while it is
        the source of none)."""
        vhost, name = command.vhost, command.exchange
        if not name or name in BUILTIN_EXCHANGES:
            return Invalid(f"exchange {name!r} cannot be deleted")
        if (vhost, name) not in self.exchanges:
            return NotFound(f"no exchange {name!r} in vhost {vhost!r}")
        if command.if_unused and any(b.vhost == vhost and b.source == name for b in self.bindings.values()):
            return InUse(f"exchange {name!r} is the source of a binding")
        del self.exchanges[(vhost, name)]
        self._remove_bindings(
            lambda b: (
                b.vhost == vhost
                and (
                    b.source == name or (b.destination_type == EXCHANGE_DESTINATION and b.destination == name)
                )
            )
        )
        self.routing_revision += 1
        return Ok()

    def _bind(self, command: Bind) -> Reply:
        binding = _binding(command)
        vhost = binding.vhost
        if not binding.source:
            return Invalid("the default exchange takes no bindings")
        if not self.has_vhost(vhost):
            return NotFound(f"no vhost {vhost!r}")
        if binding.destination_type not in (QUEUE_DESTINATION, EXCHANGE_DESTINATION):
            return Invalid(f"no destination type {binding.destination_type!r}")
        if binding.destination_type == EXCHANGE_DESTINATION and not binding.destination:
            return Invalid("the default exchange cannot be bound to")
        if self.exchange(vhost, binding.source) is None:
            return NotFound(f"no exchange {binding.source!r} in vhost {vhost!r}")
        if binding.destination_type == QUEUE_DESTINATION:
            if SEPARATOR in binding.destination or qualified(vhost, binding.destination) not in self.queues:
                return NotFound(f"no queue {binding.destination!r} in vhost {vhost!r}")
        elif self.exchange(vhost, binding.destination) is None:
            return NotFound(f"no exchange {binding.destination!r} in vhost {vhost!r}")
        if binding.key in self.bindings:
            return Exists()
        self.bindings[binding.key] = binding
        self.routing_revision += 1
        return Created()

    def _unbind(self, command: Unbind) -> Reply:
        key = _binding(command).key
        if key not in self.bindings:
            return NotFound(f"no binding {key}")
        self._remove_bindings(lambda b: b.key == key)
        self.routing_revision += 1
        return Ok()

    def _remove_bindings(self, picked: Callable[[BindingRecord], bool]) -> bool:
        """Remove the bindings `picked` selects, then every `auto_delete` exchange this left the source of
        none with the bindings to it, and so on; whether any binding was removed."""
        gone = [b for b in self.bindings.values() if picked(b)]
        removed = bool(gone)
        while gone:
            for binding in gone:
                del self.bindings[binding.key]
            sources = {(b.vhost, b.source) for b in self.bindings.values()}
            emptied = {
                key: None
                for b in gone
                if (key := (b.vhost, b.source)) not in sources
                and (exchange := self.exchanges.get(key)) is not None
                and exchange.auto_delete
            }
            for key in emptied:
                del self.exchanges[key]
            gone = [
                b
                for b in self.bindings.values()
                if b.destination_type == EXCHANGE_DESTINATION and (b.vhost, b.destination) in emptied
            ]
        return removed


def _definition(exchange: ExchangeRecord) -> dict[str, Any]:
    """What declaring an exchange again must repeat, as a `Conflict` names it."""
    return {
        "type": exchange.type,
        "durable": exchange.durable,
        "auto_delete": exchange.auto_delete,
        "internal": exchange.internal,
        "arguments": dict(exchange.arguments),
    }


def _binding(command: Bind | Unbind) -> BindingRecord:
    return BindingRecord(
        command.vhost,
        command.source,
        command.destination,
        command.destination_type,
        command.routing_key,
        dict(command.arguments),
    )
