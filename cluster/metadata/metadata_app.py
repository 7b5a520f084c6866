"""The metadata group's application: decodes and applies metadata commands and tells the node what
changed."""

from __future__ import annotations

from collections.abc import Callable

from cluster.replication.entry_codec import EntryDecodeError, entry_ops
from cluster.replication.unreadable_entry import UnreadableEntry
from metadata_state.codec import CODEC_VERSION, MetadataDecodeError, decode
from metadata_state.machine import MetadataMachine
from metadata_state.replies import Reply
from metadata_state.snapshot import decode_snapshot, encode_snapshot
from raft_log.types import Entry


class MetadataApp:
    """Replicated cluster metadata on one node, whose build reads metadata commands up to codec `reads`."""

    def __init__(self, on_change: Callable[[], None], reads: int = CODEC_VERSION) -> None:
        self.state = MetadataMachine()
        self.is_leader = False
        self._on_change = on_change
        self._reads = reads

    def apply(self, entry: Entry, awaited: bool = False) -> list[Reply]:
        """Apply the batch of metadata commands in an entry (of any codec version); replies are the same
        whoever awaits them. UnreadableEntry, with nothing applied, when one of them does not decode (the
        leader writes only commands it encoded, in a version every node said it reads: such an entry is
        a later version's, or damaged)."""
        try:
            commands = [decode(op, self._reads) for op in entry_ops(entry.data)]
        except (EntryDecodeError, MetadataDecodeError) as exc:
            raise UnreadableEntry(f"metadata: {exc}") from exc
        replies = [self.state.apply(command) for command in commands]
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
