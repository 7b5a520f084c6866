"""Which version of each replicated format this node writes: queue operations (`entry_codec.py`) and
metadata commands (`metadata/codec.py`).

The rolling-upgrade rule, one for both formats: a node writes the newest version of a format every other
node of the cluster (the metadata group's voters and learners) said it reads, up to its own, and version
0 while one said nothing. Any node can be added to any queue's group later, and the replica of an older
node that receives an entry it cannot decode halts there (`cluster.replication.unreadable_entry`); so a node
that joins once the newest version is written must run this version or a later one. Every node says what it
reads to each peer in one control frame every second (`{"queue_codec": N, "metadata_codec": M}`;
`CodecReads` takes each key from any frame, so the separate frames of earlier versions count as well).
A peer's word belongs to its link (`CodecReads`, decision 0018).

A request that needs a version (a touch, a delay, a priority, a policy...; a publish's delays and
priorities: `require_publish`) is refused 409
`upgrade_in_progress` while a node said it reads an older one, and answered 503 `formats_not_yet_known`
(with Retry-After) while that is only not known yet: a node has not spoken since it linked with this
one, or since this one started (`require_queue_ops`, `require_metadata`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cluster.errors import FormatsNotYetKnown, Refused
from cluster.replication.codec_reads import CodecReads
from cluster.replication.entry_codec import (
    DEDUPE_OP_VERSION,
    DELAY_OP_VERSION,
    GROUPS_OP_VERSION,
    PRIORITY_OP_VERSION,
    QUEUE_OP_VERSION,
)
from metadata_state.codec import CODEC_VERSION

QUEUE_OPS_KEY = "queue_codec"
METADATA_KEY = "metadata_codec"
UPGRADE_IN_PROGRESS = "upgrade_in_progress"


class FormatVersions:
    """What the peers of node `node` said they read of each format, and so which version it writes.
    `members()` names every node of the cluster (the metadata group's voters and learners); `linked(peer)`
    tells whether a peer's link is up now (`Transport.linked`)."""

    def __init__(
        self,
        node: str,
        members: Callable[[], Iterable[str]],
        linked: Callable[[str], bool],
        reads_queue_ops: int = QUEUE_OP_VERSION,
        reads_metadata: int = CODEC_VERSION,
    ) -> None:
        """`reads_queue_ops` and `reads_metadata` are the newest queue operations and metadata codec
        versions this node's build reads."""
        self._node = node
        self._members = members
        self.queue_operations = CodecReads(QUEUE_OPS_KEY, reads_queue_ops, linked)
        self.metadata = CodecReads(METADATA_KEY, reads_metadata, linked)

    def announcement(self) -> dict[str, int]:
        """The control frame telling a peer which version of each format this node reads."""
        return {**self.queue_operations.announcement(), **self.metadata.announcement()}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Note what a peer's control frame says it reads (of either format, or neither)."""
        self.queue_operations.on_control(peer, control)
        self.metadata.on_control(peer, control)

    def link_lost(self, peer: str) -> None:
        """`peer`'s link closed: what it said counts no more once it links again, until it speaks again."""
        self.queue_operations.link_lost(peer)
        self.metadata.link_lost(peer)

    def writes_queue_ops(self) -> int:
        """The version of the queue operations this node writes into any queue group's log."""
        return self.queue_operations.version_for(self._others())

    def writes_metadata(self) -> int:
        """The codec version of the metadata commands this node writes."""
        return self.metadata.version_for(self._others())

    def metadata_read_by(self, peer: str) -> int:
        """The metadata codec version `peer` said it reads (0 while not known)."""
        return self.metadata.reads(peer) or 0

    def require_queue_ops(self, version: int, what: str) -> None:
        """Return when every node of the cluster reads queue operations `version`; else FormatsNotYetKnown
        while that is only not known yet, or Refused `upgrade_in_progress` (a node reads `what`)."""
        self._require(self.queue_operations, version, what)

    def require_publish(
        self, delays: bool, priorities: bool, message_ids: bool = False, groups: bool = False
    ) -> None:
        """As `require_queue_ops`, for what a publish carries: delays need DELAY_OP_VERSION, priorities
        PRIORITY_OP_VERSION, message ids for a deduplication window DEDUPE_OP_VERSION, groups for a queue
        with message groups GROUPS_OP_VERSION. The one gate of them, asked by the node that takes a
        publish and its leader."""
        if delays:
            self.require_queue_ops(DELAY_OP_VERSION, "no delays")
        if priorities:
            self.require_queue_ops(PRIORITY_OP_VERSION, "no priorities")
        if message_ids:
            self.require_queue_ops(DEDUPE_OP_VERSION, "no deduplication windows")
        if groups:
            self.require_queue_ops(GROUPS_OP_VERSION, "no message groups")

    def reads_queue_ops(self, version: int) -> bool:
        """Whether every node of the cluster reads queue operations `version` (False: a node said it
        reads an older one); FormatsNotYetKnown while a node that may read it has not said."""
        return self._reads(self.queue_operations, version, "an older version")

    def require_metadata(self, version: int, what: str) -> None:
        """As `require_queue_ops`, for metadata codec `version`."""
        self._require(self.metadata, version, what)

    def _require(self, reads: CodecReads, version: int, what: str) -> None:
        if not self._reads(reads, version, what):
            raise Refused(UPGRADE_IN_PROGRESS, f"a node of the cluster reads {what} yet")

    def _reads(self, reads: CodecReads, version: int, what: str) -> bool:
        others = self._others()
        if reads.version_for(others) >= version:
            return True
        unknown = reads.not_yet_known(others, version)
        if unknown:
            names = ", ".join(unknown)
            raise FormatsNotYetKnown(f"{names} said nothing yet of what it reads (it may read {what}): retry")
        return False

    def report(self) -> dict[str, dict[str, int]]:
        """Per format, the newest version this node reads and the version it writes (for health)."""
        return {
            "queue_operations": {"reads": self.queue_operations.version, "writes": self.writes_queue_ops()},
            "metadata": {"reads": self.metadata.version, "writes": self.writes_metadata()},
        }

    def _others(self) -> list[str]:
        return [member for member in self._members() if member != self._node]
