"""What membership needs of its node (`Node` provides it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from cluster.config import Address, NodeConfig
from cluster.metadata.metadata_view import MetadataView
from metadata_state.records import QueueInfo


class PeerAddresses(Protocol):
    """Where the transport reaches each peer."""

    def set_peer(self, name: str, address: Address) -> None: ...

    def remove_peer(self, name: str) -> None: ...


class HostedQueue(Protocol):
    """A queue whose group this node hosts."""

    @property
    def group(self) -> str: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def quiet(self) -> bool:
        """Whether the queue's group is quiet here: idle, with every member holding all it commits."""
        ...


class NodeView(Protocol):
    """This node's view of itself and its cluster (`NodeStatus`)."""

    def is_up(self, name: str) -> bool:
        """True for this node and for peers with a live Raft connection."""
        ...

    def cluster_members(self) -> list[str]:
        """The metadata group's voters."""
        ...

    def is_cluster_node(self, name: str) -> bool:
        """True for a registered node of the metadata group, a joining learner included."""
        ...

    def meta_leader(self) -> str | None:
        """The node leading the metadata group, when known."""
        ...

    def rebinding(self, gid: str) -> dict[str, Any] | None:
        """Why this node's replica in `gid` is a new incarnation not yet rebound, or None."""
        ...


class QueueFinder(Protocol):
    """Declared queues and their leaders (`QueueDirectory`)."""

    def info(self, name: str) -> QueueInfo:
        """A declared queue, or QueueNotFound."""
        ...

    def leader_of(self, name: str) -> str | None:
        """The node leading a queue's group, when known."""
        ...

    def leading_door(self, name: str) -> HostedQueue:
        """A queue this node leads, or NotLeader with a hint."""
        ...


class MembershipHost(Protocol):
    """The node as membership sees it: its metadata, peers, the queues it hosts, and its views of itself
    and of the declared queues."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> NodeConfig: ...

    @property
    def metadata(self) -> MetadataView: ...

    @property
    def transport(self) -> PeerAddresses: ...

    @property
    def queues(self) -> Mapping[str, HostedQueue]: ...

    @property
    def led_queues(self) -> Mapping[str, HostedQueue]: ...

    @property
    def status(self) -> NodeView: ...

    @property
    def directory(self) -> QueueFinder: ...
