"""A consumer's name in the queue state names its owner, the user who registered it: `NAME~OWNER`.

User names, queue names and the tokens of consumer tags hold no `~`, so the owner is what follows the
last one. Names without it were registered by an earlier version (or by the node itself) and name no
owner. The queue state keeps names as it always did: ownership needs no change of a replicated format.
"""

from __future__ import annotations

OWNER_MARK = "~"


def owned(name: str, owner: str) -> str:
    """The name of consumer `name` of user `owner` in the queue state."""
    return f"{name}{OWNER_MARK}{owner}"


def owner_of(name: str) -> str | None:
    """The user a consumer's name says registered it; None for a name of no owner."""
    _, mark, owner = name.rpartition(OWNER_MARK)
    return owner if mark else None
