"""The snapshot stream format: a header chunk, then `[kind, payload]` chunks, then an end marker.

Every chunk is one msgpack document, so a snapshot can be written and read piece by piece. The header
carries the format version; a stream without its end marker is truncated. Version 2 added each
publisher's watermark and the header's `sealed`; version 3 a reader's time as a sixth field of its
consumer row, and is written only by a queue that has a reader (which only a cluster whose nodes all read
queue operations version 2 can register), so a snapshot without one stays readable by version-2 code.
Version 4 adds each message's acquired count (a sixth ready column, a sixth field of held rows) and a
dead letter's reason text (`[*message, reason, handed_out, reason_text]`), and is written only when the
state has a message whose acquired count differs from its delivery count or a reason text (only plain
returns and reasons do that: queue operations version 3). Version 5 adds `delayed` chunks (rows of a
message's six fields, its time and where it goes then, or -1 and -1 for a due published one) and is
written only when a message is delayed (queue operations version 5). Version 6 adds priorities: a
seventh field of every message row (held, durable, dead letter, delayed) and `level` chunks
(`[priority, "returns" or "main", columns]`) for the ready messages of levels above 0, whose own
`returns` and `main` chunks stay as they were; it is written only when a message has a priority (queue
operations version 6). Version 7 adds the header's `policy` (`[name, arguments, revision]`, the policy
the queue applies and the revision of the policies that chose it; its `config` stays the declared
configuration) and is written once a policy was applied (queue operations version 7). Version 8 adds
a `redrives` chunk (`[serial, [task row, ...]]`: the queue's redrive tasks and the serial of the last
one started) and is written once a redrive task was started (queue operations version 8). Version 9
adds a seventh field, true, to an auto-ack consumer's row (its sixth, the reader time, then written even
when None) and is written while the queue has one (queue operations version 9). Version 10 adds the
header's `paced_at` (when the queue last handed out under its `x-dequeue-interval-ms`) and is written
while the queue paces its hand-outs (queue operations version 10); an earlier version restores with none,
as a queue that never paced. Version 11 adds a `dedupe` chunk (`[evicted, refused, [[message id, first
id, at_ms], ...]]`: the deduplication window, oldest first, and its counters) and is written while the
window holds an id or counted one (queue operations version 11). Version 12 adds message groups: an
eighth field of every message row (its group's number, 0 for none) and `groups` chunks
(`MessageGroups.to_wire`: the groups' names, their ready messages and which are blocked and whose turn
it is), and is written by every queue with `x-message-groups` (queue operations version 13). Versions
before 4
restore with each message's acquired count equal to its delivery count, versions before 6 with every
message at level 0. Version 1 is only read: `SnapshotReader` hands it to `queue_state.legacy_formats`
first (docs/internals/formats.md lists every version).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgpack

from queue_state import legacy_formats

SNAPSHOT_VERSION = 12  # 2: publishers' watermarks, `sealed`; 3: readers' times; 4: acquired counts, reasons;
# 5: delayed messages; 6: priorities; 7: the applied policy; 8: redrive tasks; 9: auto-ack consumers;
# 10: the time of the last paced hand-out; 11: the deduplication window; 12: message groups
WRITTEN_VERSIONS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
"""The versions a queue writes: the oldest that holds its state (`QueueMachine.snapshot_chunks`)."""
READABLE_VERSIONS = (*legacy_formats.SNAPSHOT_VERSIONS, *WRITTEN_VERSIONS)
END_OF_SNAPSHOT = "end"


class SnapshotError(ValueError):
    """Snapshot chunks that cannot be restored (wrong version, truncated, malformed)."""


def snapshot_header(version: int, **fields: Any) -> bytes:
    """The first chunk: the format `version` (one of WRITTEN_VERSIONS) and the machine's scalar state."""
    if version not in WRITTEN_VERSIONS:
        raise ValueError(f"no snapshot version {version}")
    packed: bytes = msgpack.packb({"version": version, **fields})
    return packed


def pack_chunk(kind: str, payload: Any) -> bytes:
    packed: bytes = msgpack.packb([kind, payload])
    return packed


class SnapshotReader:
    """Reads a snapshot stream: `header` first, then `parts()` up to the end marker, both in the form of
    the versions still written (a version only read, `legacy_formats.SNAPSHOT_VERSIONS`, goes through
    `legacy_formats` first)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        first = next(self._chunks, None)
        if first is None:
            raise SnapshotError("empty snapshot")
        header = msgpack.unpackb(first, raw=False, strict_map_key=False)
        if not isinstance(header, dict) or header.get("version") not in READABLE_VERSIONS:
            raise SnapshotError(f"unsupported snapshot header (expected a version in {READABLE_VERSIONS})")
        self._legacy = header["version"] in legacy_formats.SNAPSHOT_VERSIONS
        self.header: dict[str, Any] = legacy_formats.snapshot_header(header) if self._legacy else header

    def parts(self) -> Iterator[tuple[str, Any]]:
        for chunk in self._chunks:
            kind, payload = msgpack.unpackb(chunk, raw=False, strict_map_key=False)
            if kind == END_OF_SNAPSHOT:
                return
            yield kind, legacy_formats.snapshot_part(kind, payload) if self._legacy else payload
        raise SnapshotError("truncated snapshot: no end marker")
