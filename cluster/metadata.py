"""The metadata group's state machine: cluster members and queue definitions with their replica sets.

Deterministic like every state machine here: placement choices are made by the proposer and arrive
inside the command; `apply` only checks and records them.

A queue's member list is written by the leader of the queue's group (`set_members`), each list with a
fence `[term, sequence]`: the group's term in which that leader decided it and the rank of the decision
among that leader's decisions. A list whose fence is older than the applied one is refused, so a
deposed leader cannot undo what its successor decided (docs/decisions/0007-members-fence.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import msgpack

from cluster.users import FULL_ACCESS, UserRecord

# 1: no version key, queues without `members_fence`; 2: adds both; 3: nodes with `incarnation`, queues
# with `initial_incarnations`.
SNAPSHOT_VERSION = 3
# The fence of a queue no fenced `set_members` wrote yet, and of a `set_members` logged without one.
UNFENCED = (0, 0)


@dataclass(frozen=True)
class NodeInfo:
    """A cluster member, where to reach it and the incarnation (database) it registered from ("" when
    registered before incarnations existed)."""

    name: str
    http: str
    raft: str
    incarnation: str = ""


@dataclass
class QueueInfo:
    """A declared queue: its Raft group id, canonical arguments and intended replica set.

    `initial_members` is the membership the group was created with; it is emptied by the first
    membership change, after which a node opening the group starts it empty and waits for the leader.
    `members_fence` is the fence of the `set_members` that wrote `members` (`UNFENCED` until one did).
    `initial_incarnations` are the registered incarnations of the initial members when the queue was
    declared (members registered without one are left out): the group's bootstrap configuration.
    """

    name: str
    group: str
    arguments: dict[str, Any]
    members: list[str]
    created_ms: int
    initial_members: list[str] = field(default_factory=list)
    members_fence: list[int] = field(default_factory=lambda: list(UNFENCED))
    initial_incarnations: dict[str, str] = field(default_factory=dict)


@dataclass
class Metadata:
    """What the metadata group replicates."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    next_group: int = 1
    users: dict[str, UserRecord] = field(default_factory=dict)
    users_initialised: bool = False

    def apply(self, command: list) -> Any:
        """Apply one metadata command (a list whose first item names it) and return its reply."""
        op, *args = command
        handler = getattr(self, f"_apply_{op}", None)
        if handler is None:
            return ["error", f"unknown metadata command {op!r}"]
        return handler(*args)

    def _apply_register_node(self, name: str, http: str, raft: str, incarnation: str = "") -> Any:
        """Record a node's addresses and incarnation (commands logged before incarnations carry none)."""
        if not _all_strings(name, http, raft, incarnation):
            return ["error", "register_node takes a name, two addresses and an incarnation"]
        self.nodes[name] = NodeInfo(name, http, raft, incarnation)
        return ["ok"]

    def _apply_forget_node(self, name: str) -> Any:
        if self.nodes.pop(name, None) is None:
            return ["error", f"unknown node {name!r}"]
        return ["ok"]

    def _apply_declare(self, name: str, arguments: dict, members: list[str], now_ms: int) -> Any:
        existing = self.queues.get(name)
        if existing is not None:
            if existing.arguments == arguments:
                return ["exists", existing.group]
            return ["conflict", existing.arguments]
        if not members:
            return ["error", "a queue needs at least one member"]
        info = QueueInfo(name, f"q{self.next_group}.{name}", arguments, list(members), now_ms, list(members))
        info.initial_incarnations = {m: i for m in members if (i := self._incarnation(m))}
        self.next_group += 1  # only once the command is known to be well formed
        self.queues[name] = info
        return ["created", info.group]

    def _incarnation(self, node: str) -> str:
        info = self.nodes.get(node)
        return info.incarnation if info is not None else ""

    def _apply_delete(self, name: str, group: str) -> Any:
        existing = self.queues.get(name)
        if existing is None or existing.group != group:
            return ["error", f"no queue {name!r} with group {group!r}"]
        del self.queues[name]
        return ["ok"]

    def _apply_set_members(self, name: str, group: str, members: list[str], fence: Any = None) -> Any:
        """Record a queue's member list unless its fence is older than the applied one (`stale`).

        A command without a fence (None; every one logged before fences existed) counts as UNFENCED:
        it applies as it always did while no fenced list was applied to the queue."""
        if fence is None:
            fence = list(UNFENCED)
        elif not _is_fence(fence):
            return ["error", "a set_members fence is [term, sequence], two non-negative integers"]
        existing = self.queues.get(name)
        if existing is None or existing.group != group:
            return ["error", f"no queue {name!r} with group {group!r}"]
        if fence < existing.members_fence:
            applied = existing.members_fence
            return ["stale", f"the members of {name!r} at fence {fence} are older than those at {applied}"]
        existing.members = list(members)
        existing.members_fence = list(fence)
        existing.initial_members = []
        existing.initial_incarnations = {}
        return ["ok"]

    def _apply_set_arguments(self, name: str, group: str, arguments: dict[str, Any]) -> Any:
        existing = self.queues.get(name)
        if existing is None or existing.group != group:
            return ["error", f"no queue {name!r} with group {group!r}"]
        existing.arguments = dict(arguments)
        return ["ok"]

    def _apply_bootstrap_users(self, name: str, password_hash: str) -> Any:
        """Once per cluster: create the bootstrap administrator (none when `name` is empty)."""
        if not _all_strings(name, password_hash):
            return ["error", "bootstrap_users takes a name and a password hash"]
        if self.users_initialised:
            return ["exists"]
        self.users_initialised = True
        if name:
            self.users[name] = UserRecord(name, password_hash, ["administrator"], *[FULL_ACCESS] * 3)
        return ["created"]

    def _apply_put_user(self, name: str, password_hash: str, tags: list[str]) -> Any:
        """Create a user (no permissions yet) or update one; an empty hash keeps the password."""
        if not isinstance(tags, list) or not _all_strings(name, password_hash, *tags):
            return ["error", "put_user takes a name, a password hash and a list of tags"]
        existing = self.users.get(name)
        if existing is None:
            if not password_hash:
                return ["error", f"a new user needs a password ({name!r})"]
            self.users[name] = UserRecord(name, password_hash, list(tags))
            return ["created"]
        existing.tags = list(tags)
        existing.password_hash = password_hash or existing.password_hash
        return ["updated"]

    def _apply_delete_user(self, name: str) -> Any:
        if self.users.pop(name, None) is None:
            return ["error", f"no user {name!r}"]
        return ["ok"]

    def _apply_set_permissions(self, name: str, configure: str, write: str, read: str) -> Any:
        if not _all_strings(name, configure, write, read):
            return ["error", "set_permissions takes a name and three patterns"]
        existing = self.users.get(name)
        if existing is None:
            return ["error", f"no user {name!r}"]
        existing.configure, existing.write, existing.read = configure, write, read
        return ["ok"]

    def snapshot(self) -> bytes:
        """The whole state as msgpack."""
        return msgpack.packb(
            {
                "version": SNAPSHOT_VERSION,
                "nodes": [asdict(n) for n in self.nodes.values()],
                "queues": [asdict(q) for q in self.queues.values()],
                "next_group": self.next_group,
                "users": [asdict(u) for u in self.users.values()],
                "users_initialised": self.users_initialised,
            }
        )

    @classmethod
    def restore(cls, data: bytes) -> Metadata:
        """Rebuild the state from `snapshot()` output of this version or an earlier one (ValueError
        for a later one); fields an earlier version lacks get their defaults (a version-1 queue is UNFENCED;
        nodes and queues of versions 1 and 2 know no incarnations)."""
        raw = msgpack.unpackb(data, raw=False)
        version = raw.get("version", 1)
        if version > SNAPSHOT_VERSION:
            raise ValueError(f"metadata snapshot version {version} is newer than {SNAPSHOT_VERSION}")
        return cls(
            nodes={n["name"]: NodeInfo(**n) for n in raw["nodes"]},
            queues={q["name"]: QueueInfo(**q) for q in raw["queues"]},
            next_group=raw["next_group"],
            users={u["name"]: UserRecord(**u) for u in raw.get("users", [])},
            users_initialised=raw.get("users_initialised", False),
        )


def _all_strings(*values: Any) -> bool:
    return all(isinstance(v, str) for v in values)


def _is_fence(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == len(UNFENCED)
        and all(type(v) is int and v >= 0 for v in value)
    )
