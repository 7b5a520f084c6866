"""Raft addresses passed between peers, for a node whose metadata does not list them yet.

A node reaches its peers at the addresses its metadata registers (and, before that, at its seeds'). One
that holds no metadata yet knows no more than its seeds: a seed wiped and started again from them, or
a node that joined before its answer could list every member. The transport links only peers it knows
(a hello from any other name is refused), so such a node could neither answer a metadata leader that
is none of those, nor ever receive the metadata that would name it. Each node therefore tells a peer
whose current incarnation its metadata does not register (it may hold no metadata) the Raft address of
every node it registers, and a node that its own metadata does not register yet takes those of names it
does not know. Control frame key: `{"addresses": {name: "host:port"}}`; nodes of an earlier version
ignore it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cluster.config import Address, ConfigError
from cluster.metadata.records import NodeInfo

log = logging.getLogger(__name__)


class AddressedPeers(Protocol):
    """The transport: the peers it knows, the incarnation each proved, and where it reaches each."""

    def peers(self) -> dict[str, bool]: ...

    def peer_incarnation(self, name: str) -> str: ...

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

    def announcement(self, peer: str) -> dict[str, Any]:
        """The addresses to tell `peer`: none unless the metadata lacks its current incarnation."""
        nodes = self._registered()
        known = nodes.get(peer)
        if known is not None and known.incarnation == self._transport.peer_incarnation(peer):
            return {}
        return {"addresses": {node.name: node.raft for node in nodes.values()}}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Take the addresses `peer` told of names the transport does not know, while the metadata does
        not register this node (afterwards it names every peer itself)."""
        addresses = control.get("addresses")
        if not isinstance(addresses, dict) or self._name in self._registered():
            return
        known = self._transport.peers()
        for name, raft in addresses.items():
            if not isinstance(name, str) or not isinstance(raft, str) or name == self._name or name in known:
                continue
            try:
                address = Address.parse(raft, what="raft")
            except ConfigError:
                log.warning("peer %s told an unreadable address for %s: %r", peer, name, raft)
                continue
            self._transport.set_peer(name, address)
            log.info("reaching %s at %s, as %s told (no metadata here names it yet)", name, raft, peer)
