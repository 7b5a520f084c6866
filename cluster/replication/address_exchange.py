"""Raft addresses passed between peers, for a node whose metadata does not list them yet.

A node reaches its peers at the addresses its metadata registers (and, before that, at its seeds'). One
whose metadata lags knows no node registered since: a seed wiped and started again from its seeds, a
node that was down while another joined. The transport links only peers it knows (a hello from any
other name is refused), so such a node could neither answer a metadata leader among those nodes nor
receive the metadata that would name it. Each node therefore tells its peers, with the formats it
reads, the Raft address of every node its metadata registers, and a node takes those of names its
transport does not know, but never a name its own metadata has forgotten (a peer whose metadata lags
may still register it). Control frame key: `{"addresses": {name: "host:port"}}`; nodes of an earlier
version ignore it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cluster.config import Address, ConfigError
from metadata_state.records import NodeInfo

log = logging.getLogger(__name__)

MAX_ADDRESSES = 1024  # names taken from one frame at most


class AddressedPeers(Protocol):
    """The transport: the peers it knows and where it reaches each."""

    def peers(self) -> dict[str, bool]: ...

    def set_peer(self, name: str, address: Address) -> None: ...


class AddressExchange:
    """The addresses node `name` tells its peers and learns from them; `registered` gives the metadata's
    node registry as this node applied it."""

    def __init__(
        self, name: str, registered: Callable[[], Mapping[str, NodeInfo]], transport: AddressedPeers
    ) -> None:
        self._name = name
        self._registered = registered
        self._transport = transport
        self._seen: set[str] = set()  # every name this node's metadata has registered

    def announcement(self) -> dict[str, Any]:
        """The addresses to tell a peer: every registered node's."""
        return {"addresses": {node.name: node.raft for node in self._registered().values()}}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Take the addresses `peer` told of names the transport does not know (a name it knows keeps the
        address this node's own metadata or seeds gave it) and this node's metadata has not forgotten."""
        registered = self._registered()
        self._seen.update(registered)
        addresses = control.get("addresses")
        if not isinstance(addresses, dict):
            return
        known = self._transport.peers()
        for name, raft in list(addresses.items())[:MAX_ADDRESSES]:
            if not isinstance(name, str) or not isinstance(raft, str) or name == self._name or name in known:
                continue
            if name in self._seen and name not in registered:
                continue  # forgotten here
            try:
                address = Address.parse(raft, what="raft")
            except (ConfigError, ValueError):
                log.warning("peer %s told an unreadable address for %s: %r", peer, name[:64], raft[:64])
                continue
            self._transport.set_peer(name, address)
            log.info("reaching %s at %s, as %s told (no metadata here names it yet)", name, raft, peer)
