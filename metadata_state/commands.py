"""The commands the metadata group applies, as validated frozen records.

Choices (placement, the queue's creation time, password hashes) are made by the proposer and arrive
inside the command, so applying one stays deterministic. Constructing a command with a value it cannot
take raises `InvalidCommand`; the codec turns that into `MetadataDecodeError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeAlias

from metadata_state.records import UNFENCED
from metadata_state.vhost_names import DEFAULT_VHOST


class InvalidCommand(ValueError):
    """A command field has a type or value the metadata machine does not accept."""


def _check_strings(command: object, *names: str) -> None:
    for name in names:
        value = getattr(command, name)
        if type(value) is not str:
            raise InvalidCommand(f"{name} must be a string, got {value!r}")


def _check_string_tuple(name: str, value: object) -> None:
    if type(value) is not tuple or not all(type(item) is str for item in value):
        raise InvalidCommand(f"{name} must be a tuple of strings, got {value!r}")


def _check_bool(name: str, value: object) -> None:
    if type(value) is not bool:
        raise InvalidCommand(f"{name} must be a boolean, got {value!r}")


def _check_arguments(value: object) -> None:
    if type(value) is not dict or not all(type(key) is str for key in value):
        raise InvalidCommand(f"arguments and definitions are maps with string keys, got {value!r}")


MAX_ARGUMENT_DEPTH = 16
"""How deep an exchange's or binding's arguments may nest (a map or list in another counts one more)."""
MAX_ARGUMENT_VALUES = 1024
"""How many values (keys, elements and scalars) an exchange's or binding's arguments may hold."""


def check_routing_arguments(value: object) -> None:
    """A map of JSON values with string keys at every depth, at most MAX_ARGUMENT_DEPTH deep and of
    MAX_ARGUMENT_VALUES values, numbers finite: what a binding's key digests, and a snapshot encodes, on
    every replica (the edge checks a declare or bind with it first, `cluster.routing.exchange_checks`)."""
    _check_arguments(value)
    pending: list[tuple[object, int]] = [(value, 1)]
    values = 0
    while pending:
        item, depth = pending.pop()
        values += 1
        if depth > MAX_ARGUMENT_DEPTH:
            raise InvalidCommand(f"routing arguments nest at most {MAX_ARGUMENT_DEPTH} deep")
        if values > MAX_ARGUMENT_VALUES:
            raise InvalidCommand(f"routing arguments hold at most {MAX_ARGUMENT_VALUES} values")
        if isinstance(item, dict):
            if not all(type(key) is str for key in item):
                raise InvalidCommand("routing arguments have string keys at every depth")
            values += len(item)
            pending.extend((child, depth + 1) for child in item.values())
        elif type(item) is list:
            pending.extend((child, depth + 1) for child in item)
        elif type(item) is float and not math.isfinite(item):
            raise InvalidCommand(f"routing arguments are JSON values, got {item!r}")
        elif item is not None and type(item) not in (str, int, float, bool):
            raise InvalidCommand(f"routing arguments are JSON values, got {type(item).__name__}")


@dataclass(frozen=True, slots=True)
class RegisterNode:
    """Record a node's addresses and the incarnation (database) it runs from ("" when unknown)."""

    node: str
    http: str
    raft: str
    incarnation: str = ""

    def __post_init__(self) -> None:
        _check_strings(self, "node", "http", "raft", "incarnation")


@dataclass(frozen=True, slots=True)
class ForgetNode:
    """Remove a permanently lost node from the registry."""

    node: str

    def __post_init__(self) -> None:
        _check_strings(self, "node")


@dataclass(frozen=True, slots=True)
class Declare:
    """Declare a queue with canonical `arguments` on the `members` the proposer placed it on (preferred
    leader first), created at the proposer's wall clock `created_ms`."""

    queue: str
    arguments: dict[str, Any]
    members: tuple[str, ...]
    created_ms: int

    def __post_init__(self) -> None:
        _check_strings(self, "queue")
        _check_arguments(self.arguments)
        _check_string_tuple("members", self.members)
        if type(self.created_ms) is not int:
            raise InvalidCommand(f"created_ms must be an integer, got {self.created_ms!r}")


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete the queue `queue` if its group is still `group` (not a later queue of the same name)."""

    queue: str
    group: str

    def __post_init__(self) -> None:
        _check_strings(self, "queue", "group")


@dataclass(frozen=True, slots=True)
class SetMembers:
    """List `members` for a queue, decided by its group's leader under `fence` = (term, sequence)."""

    queue: str
    group: str
    members: tuple[str, ...]
    fence: tuple[int, int] = UNFENCED

    def __post_init__(self) -> None:
        _check_strings(self, "queue", "group")
        _check_string_tuple("members", self.members)
        fence = self.fence
        if type(fence) is not tuple or len(fence) != len(UNFENCED) or not all(_natural(v) for v in fence):
            raise InvalidCommand(f"a fence is (term, sequence), two non-negative integers, got {fence!r}")


@dataclass(frozen=True, slots=True)
class SetArguments:
    """Record the arguments a queue's leader changed at runtime."""

    queue: str
    group: str
    arguments: dict[str, Any]

    def __post_init__(self) -> None:
        _check_strings(self, "queue", "group")
        _check_arguments(self.arguments)


@dataclass(frozen=True, slots=True)
class BootstrapUsers:
    """Once per cluster: initialise the user table with an administrator (none when `user` is "")."""

    user: str
    password_hash: str

    def __post_init__(self) -> None:
        _check_strings(self, "user", "password_hash")


@dataclass(frozen=True, slots=True)
class PutUser:
    """Create a user (no permissions yet) or update its tags; an empty hash keeps its password."""

    user: str
    password_hash: str
    tags: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_strings(self, "user", "password_hash")
        _check_string_tuple("tags", self.tags)


@dataclass(frozen=True, slots=True)
class DeleteUser:
    """Delete a user."""

    user: str

    def __post_init__(self) -> None:
        _check_strings(self, "user")


@dataclass(frozen=True, slots=True)
class SetPermissions:
    """Set a user's three permission patterns in `vhost` (one other than DEFAULT_VHOST: metadata codec
    version 5)."""

    user: str
    configure: str
    write: str
    read: str
    vhost: str = DEFAULT_VHOST

    def __post_init__(self) -> None:
        _check_strings(self, "user", "configure", "write", "read", "vhost")


@dataclass(frozen=True, slots=True)
class ClearPermissions:
    """Take a user's permissions in `vhost` away (metadata codec version 5)."""

    user: str
    vhost: str

    def __post_init__(self) -> None:
        _check_strings(self, "user", "vhost")


@dataclass(frozen=True, slots=True)
class DeclareVhost:
    """Create virtual host `vhost`, or update its description and tags (metadata codec version 5)."""

    vhost: str
    description: str
    tags: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_strings(self, "vhost", "description")
        _check_string_tuple("tags", self.tags)


@dataclass(frozen=True, slots=True)
class DeleteVhost:
    """Delete virtual host `vhost` with its exchanges, bindings, policies and the permissions users hold
    in it, while it holds no queue (metadata codec version 5)."""

    vhost: str

    def __post_init__(self) -> None:
        _check_strings(self, "vhost")


@dataclass(frozen=True, slots=True)
class SetPolicy:
    """Create or replace policy `policy` of `vhost` (checked by the proposer:
    `cluster.queues.policies.checked_policy`); with `operator`, the operator policy of that name (metadata
    codec version 3), whose limits apply over the queues' own and their policy's. A vhost other than
    DEFAULT_VHOST needs metadata codec version 5."""

    policy: str
    pattern: str
    definition: dict[str, Any]
    priority: int
    operator: bool = False
    vhost: str = DEFAULT_VHOST

    def __post_init__(self) -> None:
        _check_strings(self, "policy", "pattern", "vhost")
        _check_arguments(self.definition)
        if type(self.priority) is not int:
            raise InvalidCommand(f"priority must be an integer, got {self.priority!r}")
        _check_bool("operator", self.operator)


@dataclass(frozen=True, slots=True)
class ClearPolicy:
    """Remove policy `policy` of `vhost` (with `operator`, the operator policy of that name)."""

    policy: str
    operator: bool = False
    vhost: str = DEFAULT_VHOST

    def __post_init__(self) -> None:
        _check_strings(self, "policy", "vhost")
        _check_bool("operator", self.operator)


@dataclass(frozen=True, slots=True)
class DeclareExchange:
    """Declare exchange `exchange` of vhost `vhost` (checked by the proposer:
    `cluster.routing.exchange_checks`; metadata codec version 4)."""

    vhost: str
    exchange: str
    type: str
    durable: bool
    auto_delete: bool
    internal: bool
    arguments: dict[str, Any]

    def __post_init__(self) -> None:
        _check_strings(self, "vhost", "exchange", "type")
        for name in ("durable", "auto_delete", "internal"):
            _check_bool(name, getattr(self, name))
        check_routing_arguments(self.arguments)


@dataclass(frozen=True, slots=True)
class DeleteExchange:
    """Delete an exchange and every binding from or to it; with `if_unused`, only while it is the source
    of no binding."""

    vhost: str
    exchange: str
    if_unused: bool = False

    def __post_init__(self) -> None:
        _check_strings(self, "vhost", "exchange")
        _check_bool("if_unused", self.if_unused)


@dataclass(frozen=True, slots=True)
class _BindingCommand:
    """The fields of a binding: from exchange `source` to the queue or exchange (`destination_type`)
    `destination`, with a routing key and arguments."""

    vhost: str
    source: str
    destination: str
    destination_type: str
    routing_key: str
    arguments: dict[str, Any]

    def __post_init__(self) -> None:
        _check_strings(self, "vhost", "source", "destination", "destination_type", "routing_key")
        check_routing_arguments(self.arguments)


@dataclass(frozen=True, slots=True)
class Bind(_BindingCommand):
    """Bind exchange `source` to the queue or exchange (`destination_type`) `destination`."""


@dataclass(frozen=True, slots=True)
class Unbind(_BindingCommand):
    """Remove the binding a `Bind` with these fields made."""


Command: TypeAlias = (
    RegisterNode
    | ForgetNode
    | Declare
    | Delete
    | SetMembers
    | SetArguments
    | BootstrapUsers
    | PutUser
    | DeleteUser
    | SetPermissions
    | SetPolicy
    | ClearPolicy
    | DeclareExchange
    | DeleteExchange
    | Bind
    | Unbind
    | DeclareVhost
    | DeleteVhost
    | ClearPermissions
)


def _natural(value: object) -> bool:
    return type(value) is int and value >= 0
