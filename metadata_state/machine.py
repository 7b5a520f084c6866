"""The metadata machine: applies one command to the node registry, the queues, the users and the
policies.

Deterministic like every state machine here: placement, creation times and password hashes are chosen
by the proposer and arrive inside the command; `apply` only checks and records them, and a command it
refuses changes nothing.

A queue's member list is written by the leader of the queue's group (`SetMembers`), each list with a
fence (term, sequence): the group's term in which that leader decided it and the rank of the decision
among that leader's decisions. A list whose fence is older than the applied one is refused, so a
deposed leader cannot undo what its successor decided (docs/decisions/0007-members-fence.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import assert_never

from metadata_state.commands import (
    BootstrapUsers,
    ClearPolicy,
    Command,
    Declare,
    Delete,
    DeleteUser,
    ForgetNode,
    PutUser,
    RegisterNode,
    SetArguments,
    SetMembers,
    SetPermissions,
    SetPolicy,
)
from metadata_state.records import (
    ADMINISTRATOR,
    FULL_ACCESS,
    NodeInfo,
    PolicyRecord,
    QueueInfo,
    UserRecord,
)
from metadata_state.replies import (
    Conflict,
    Created,
    Exists,
    Invalid,
    NotFound,
    Ok,
    Reply,
    Stale,
    Updated,
)


@dataclass
class MetadataMachine:
    """What the metadata group replicates."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    next_group: int = 1
    users: dict[str, UserRecord] = field(default_factory=dict)
    users_initialised: bool = False
    policies: dict[str, PolicyRecord] = field(default_factory=dict)
    policies_revision: int = 0
    operator_policies: dict[str, PolicyRecord] = field(default_factory=dict)

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
            case _:
                assert_never(command)

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
        existing.configure, existing.write, existing.read = command.configure, command.write, command.read
        return Ok()

    def _set_policy(self, command: SetPolicy) -> Reply:
        """Create or replace a policy (an operator policy: `operator_policies`); every change of either
        counts one more revision, which a
        queue applies its policy under, so that a leader whose metadata lags cannot bring back an older
        choice (`queue_state/policy.py`)."""
        policies = self.operator_policies if command.operator else self.policies
        existed = command.policy in policies
        policies[command.policy] = PolicyRecord(
            command.policy, command.pattern, dict(command.definition), command.priority
        )
        self.policies_revision += 1
        return Updated() if existed else Created()

    def _clear_policy(self, command: ClearPolicy) -> Reply:
        policies = self.operator_policies if command.operator else self.policies
        if policies.pop(command.policy, None) is None:
            return NotFound(f"no {'operator ' if command.operator else ''}policy {command.policy!r}")
        self.policies_revision += 1
        return Ok()
