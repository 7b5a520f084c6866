"""The metadata group's application: decodes and applies metadata commands and tells the node what
changed."""

from __future__ import annotations

import logging
from collections.abc import Callable

from cluster.entry_codec import EntryDecodeError, entry_ops
from cluster.metadata.codec import MetadataDecodeError, decode
from cluster.metadata.machine import MetadataMachine
from cluster.metadata.replies import Invalid, Reply
from cluster.metadata.snapshot import decode_snapshot, encode_snapshot
from raft_log.types import Entry

log = logging.getLogger(__name__)


class MetadataApp:
    """Replicated cluster metadata on one node."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.state = MetadataMachine()
        self.is_leader = False
        self._on_change = on_change

    def apply(self, entry: Entry) -> list[Reply]:
        """Apply the batch of metadata commands in an entry (of any codec version); a command that does
        not decode is answered `Invalid` and changes nothing."""
        try:
            ops = entry_ops(entry.data)
        except EntryDecodeError as exc:
            log.error("metadata: entry at index %d skipped: %s", entry.index, exc)
            return []
        replies: list[Reply] = []
        for op in ops:
            try:
                command = decode(op)
            except MetadataDecodeError as exc:
                log.warning("metadata: malformed command at index %d: %s", entry.index, exc)
                replies.append(Invalid(f"malformed metadata command: {exc}"))
                continue
            replies.append(self.state.apply(command))
        self._on_change()
        return replies

    def snapshot_data(self) -> bytes:
        """The whole metadata."""
        return encode_snapshot(self.state)

    def export_snapshot(self, stored: bytes) -> bytes:
        """Metadata snapshots travel as stored."""
        return stored

    def restore(self, data: bytes) -> None:
        """Replace the metadata with a snapshot's."""
        self.state = decode_snapshot(data)
        self._on_change()

    def release_log(self, index: int) -> list[int]:
        """The metadata needs no entry once it is snapshotted."""
        return []

    def role_changed(self, is_leader: bool) -> None:
        """Remember whether this node leads the metadata group."""
        self.is_leader = is_leader
