"""Which host a node runs on: the host part of the Raft address it registered.

Several node processes may share a host (one per core, decision 0015); placement keeps a queue's
replicas on distinct hosts so that losing a host loses at most one replica of each queue.
"""

from __future__ import annotations

from collections.abc import Mapping

from cluster.config import Address, ConfigError
from metadata_state.records import NodeInfo


def host_of(node: str, registry: Mapping[str, NodeInfo]) -> str:
    """The host of `node`: its registered Raft address's host, else (not registered yet, or an address
    that does not parse) the node's own name, so that it counts as a host of its own."""
    info = registry.get(node)
    if info is None:
        return f"node:{node}"
    try:
        return Address.parse(info.raft, what="raft").host
    except ConfigError:
        return f"node:{node}"
