"""Virtual hosts as part of a name (docs/decisions/0029-the-vhost-is-part-of-a-name.md).

A queue of DEFAULT_VHOST is known inside the cluster by its name alone, as it was before vhosts; a
queue of another vhost by `vhost/name` (`qualified`). Neither a queue's nor a vhost's name holds a `/`
(the edge checks both), so the split is unambiguous, and queue groups, their logs and everything below
the metadata keep one string per queue. Exchanges and policies are qualified the same way where they
are matched against a user's permission patterns.
"""

from __future__ import annotations

DEFAULT_VHOST = "/"
"""The vhost every cluster has, which cannot be deleted; what every record written before vhosts is in."""
SEPARATOR = "/"


def qualified(vhost: str, name: str) -> str:
    """The cluster's name for `name` of `vhost`."""
    return name if vhost == DEFAULT_VHOST else f"{vhost}{SEPARATOR}{name}"


def split(qualified_name: str) -> tuple[str, str]:
    """The vhost and the name within it of a `qualified` name."""
    vhost, separator, name = qualified_name.partition(SEPARATOR)
    return (vhost, name) if separator and vhost else (DEFAULT_VHOST, qualified_name)


def vhost_of(qualified_name: str) -> str:
    """The vhost of a `qualified` name."""
    return split(qualified_name)[0]


def name_in_vhost(qualified_name: str) -> str:
    """The name within its vhost of a `qualified` name."""
    return split(qualified_name)[1]
