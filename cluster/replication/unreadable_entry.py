"""An entry a group's application cannot read (`GroupApp.apply` raises it; `RaftHost` halts the group)."""

from __future__ import annotations


class UnreadableEntry(Exception):
    """A committed entry the application cannot decode: written by a later version of the format, or
    damaged. The application applied nothing of it; applying what follows would part this replica from
    the others, so its group halts on this node (docs/internals/raft.md, "A replica that cannot read an entry
    halts")."""
