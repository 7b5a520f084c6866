"""Frozen: the metadata formats this build reads but no longer writes (decision 0023, the compatibility
floor: docs/decisions/0023-compatibility-floor.md).

Each version here is kept as the code that wrote it left it, and turned into the form of the oldest
version still written, which the current reader takes from there. A current reader hands a version
named here to this module first, as rabbit_fifo's `which_module` hands a machine version to the module
that applies it. Nothing here changes with the current formats; a version leaves only as the decision
record says.

- Snapshot version 1 (written until commit 65fa089, 2026-11-23): version 3's map without a `version`
  key, and in its first form (before user records, commit 7faa943) without `users` and
  `users_initialised` (none, not initialised).
- Snapshot version 2 (written until commit ecadf4c, 2026-11-23): version 3's map.

What either lacks besides (a node's `incarnation`, a queue's `members_fence`, `initial_members` and
`initial_incarnations`) takes its record's default in the current reader, as in the first snapshots of
version 3, which lacked `initial_incarnations` too: an unknown incarnation, an unfenced queue.
"""

from __future__ import annotations

from typing import Any

SNAPSHOT_VERSIONS = (1, 2)
"""The snapshot versions read here; none is written any more."""


def snapshot_version(raw: dict[str, Any]) -> int:
    """The version of a snapshot's map (version 1 wrote none)."""
    version: int = raw.get("version", 1)
    return version


def snapshot_as_version_3(raw: dict[str, Any]) -> dict[str, Any]:
    """The map of a snapshot of version 1 or 2 in version 3's form."""
    return {"users": [], "users_initialised": False, **raw, "version": 3}
