"""The metadata group's application: applies metadata commands and tells the node what changed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgpack

from cluster.metadata import Metadata
from raft_log.types import Entry

log = logging.getLogger(__name__)


class MetadataApp:
    """Replicated cluster metadata on one node."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.state = Metadata()
        self.is_leader = False
        self._on_change = on_change

    def apply(self, entry: Entry) -> list[Any]:
        """Apply the batch of metadata commands in an entry."""
        try:
            ops = msgpack.unpackb(entry.data, raw=False)
        except (ValueError, msgpack.UnpackException):
            log.error("metadata: undecodable entry at index %d skipped", entry.index)
            return []
        if not isinstance(ops, list):
            log.error("metadata: entry at index %d is not a list of commands; skipped", entry.index)
            return []
        replies = []
        for op in ops:
            try:
                replies.append(self.state.apply(op))
            except (TypeError, ValueError) as exc:
                replies.append(["error", f"malformed metadata command: {exc}"])
        self._on_change()
        return replies

    def snapshot_data(self) -> bytes:
        """The whole metadata."""
        return self.state.snapshot()

    def export_snapshot(self, stored: bytes) -> bytes:
        """Metadata snapshots travel as stored."""
        return stored

    def restore(self, data: bytes) -> None:
        """Replace the metadata with a snapshot's."""
        self.state = Metadata.restore(data)
        self._on_change()

    def release_log(self, index: int) -> list[int]:
        """The metadata needs no entry once it is snapshotted."""
        return []

    def role_changed(self, is_leader: bool) -> None:
        """Remember whether this node leads the metadata group."""
        self.is_leader = is_leader
