"""Frozen: the queue formats this build reads but no longer writes (decision 0023, the compatibility floor:
docs/decisions/0023-compatibility-floor.md).

Each version here is kept as the code that wrote it left it, and turned into the form of the oldest
version still written, which the current reader takes from there. A current reader hands a version
named here to this module first, as rabbit_fifo's `which_module` hands a machine version to the module
that applies it. Nothing here changes with the current formats; a version leaves only as the decision
record says.

- Snapshot version 1 (written until commit 2bd1f90, 2026-11-23): version 2's form, but its header has no
  `sealed` (a queue of version 1 was never sealed) and a publisher row no watermark (`[publisher, floor,
  last_seen_ms, seqs]`: the watermark is rebuilt from 0 over the window). A consumer row of four fields
  (written before consumer timeouts) restores through the trailing fields every version's rows may
  leave off (`ConsumerRegistry.from_wire`).
"""

from __future__ import annotations

from typing import Any

SNAPSHOT_VERSIONS: tuple[int, ...] = (1,)
"""The snapshot versions read here; none is written any more."""


def snapshot_header(header: dict[str, Any]) -> dict[str, Any]:
    """The header of a snapshot of version 1 in version 2's form."""
    return {"sealed": False, **header}


def snapshot_part(kind: str, payload: Any) -> Any:
    """The payload of a chunk of a version-1 snapshot in version 2's form."""
    if kind == "publishers":
        return [[publisher, 0, floor, last_seen_ms, seen] for publisher, floor, last_seen_ms, seen in payload]
    return payload
