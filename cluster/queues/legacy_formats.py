"""Frozen: the queue replica's snapshot shapes this build reads but no longer writes (decision 0023, the
compatibility floor: docs/decisions/0023-compatibility-floor.md).

- `[chunks, None]`: a local snapshot written before commit 13fd304, which added its third item, the
  entries of this node's log that hold bodies. It names none; its chunks are read as any version's
  (`queue_state/snapshot.py`).
"""

from __future__ import annotations

from typing import Any

BEFORE_LOGGED_BODIES = 2
"""The length of a local snapshot written before it named its logged bodies."""


def logged_bodies(snapshot: list[Any]) -> list[Any]:
    """The logged bodies a local snapshot names: none in one of `BEFORE_LOGGED_BODIES` items."""
    return [] if len(snapshot) == BEFORE_LOGGED_BODIES else snapshot[2]
