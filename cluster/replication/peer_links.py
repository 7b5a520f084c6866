"""What a `RaftHost` needs of the node-to-node transport: send frames to peers and know who is up.

Production uses `cluster.replication.transport.Transport` (TCP, one connection per peer); the driver
simulation uses `cluster.testing.simulated_network.SimulatedTransport`.
"""

from __future__ import annotations

from typing import Protocol


class PeerLinks(Protocol):
    """Frames to peers, the peers known, and the incarnations: this node's and the one each peer proved."""

    @property
    def incarnation(self) -> str:
        """This node's incarnation (the id of its database), proved to every peer."""
        ...

    def send(self, to: str, group: str, kind: int, *body: bytes) -> bool:
        """Queue a frame for `to`; False when the peer is unknown or cannot take more now."""
        ...

    def peers(self) -> dict[str, bool]:
        """Known peers and whether each is connected."""
        ...

    def peer_incarnation(self, name: str) -> str:
        """The incarnation `name` proved ("" before it proved one)."""
        ...
