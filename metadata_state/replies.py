"""What applying a metadata command answers its proposer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias


@dataclass(frozen=True, slots=True)
class Ok:
    """The command took effect."""


@dataclass(frozen=True, slots=True)
class Created:
    """A queue (with its new group), a user, the user table, an exchange or a binding was created."""

    group: str | None = None


@dataclass(frozen=True, slots=True)
class Updated:
    """An existing user was updated."""


@dataclass(frozen=True, slots=True)
class Exists:
    """Nothing to do: the queue (with its group) or exchange exists with the same arguments, the binding
    exists, or the user table was initialised already."""

    group: str | None = None


@dataclass(frozen=True, slots=True)
class Conflict:
    """The queue or exchange exists with other arguments (these; an exchange's whole definition)."""

    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Stale:
    """A queue's member list decided before the one applied; nothing changed."""

    reason: str


@dataclass(frozen=True, slots=True)
class NotFound:
    """The node, queue (of that group), user, exchange or binding the command names does not exist;
    nothing changed."""

    reason: str


@dataclass(frozen=True, slots=True)
class Invalid:
    """The command is malformed or breaks a rule; nothing changed."""

    reason: str


@dataclass(frozen=True, slots=True)
class InUse:
    """An exchange deleted `if_unused` is still the source of a binding; nothing changed."""

    reason: str


Reply: TypeAlias = Ok | Created | Updated | Exists | Conflict | Stale | NotFound | Invalid | InUse
