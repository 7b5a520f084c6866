"""Raft addresses passed between peers, for a node whose metadata does not list them yet.

A node reaches its peers at the addresses its metadata registers (and, before that, at its seeds'). One
whose metadata lags knows no node registered since: a seed wiped and started again from its seeds, a
node that was down while another joined. The transport links only peers it knows (a hello from any
other name is refused), so such a node could neither answer a metadata leader among those nodes nor
receive the metadata that would name it.

Each node therefore tells its peers, with the formats it reads, the Raft address of every node its
metadata registers and the metadata index it applied. A node takes the names it does not know only
from a peer ahead of it: that peer applied everything this node did, so a name it registers was not
forgotten since (or was registered again), and a name this node's own metadata forgot is never taken
back from a peer that lags. A name taken so is dropped again once this node's metadata reached the
index it was told at without registering it. Control frame keys: `{"addresses": {name: "host:port"},
"addresses_at": index}`; nodes of an earlier version ignore them.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cluster.config import Address, ConfigError
from cluster.metadata.records import NodeInfo

log = logging.getLogger(__name__)

MAX_ADDRESSES = 1024  # names read from one frame at most


class AddressedPeers(Protocol):
    """The transport: the peers it knows and where it reaches each."""

    def peers(self) -> dict[str, bool]: ...

    def set_peer(self, name: str, address: Address) -> None: ...

    def remove_peer(self, name: str) -> None: ...


class AddressExchange:
    """The addresses node `name` tells its peers and learns from them; `registered` gives the metadata's
    node registry as this node applied it, `applied` the metadata index it applied."""

    def __init__(
        self,
        name: str,
        registered: Callable[[], Mapping[str, NodeInfo]],
        applied: Callable[[], int],
        transport: AddressedPeers,
    ) -> None:
        self._name = name
        self._registered = registered
        self._applied = applied
        self._transport = transport
        self._learned: dict[str, int] = {}  # name taken from a peer -> the index that peer had applied

    def announcement(self) -> dict[str, Any]:
        """What to tell a peer: every registered node's address, and the index this node applied."""
        addresses = {node.name: node.raft for node in self._registered().values()}
        return {"addresses": addresses, "addresses_at": self._applied()}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Drop the names taken earlier that this node's metadata has since passed by, then take those
        `peer` told of that the transport does not know, if `peer` is ahead of this node."""
        registered, applied = self._registered(), self._applied()
        self._forget_passed(registered, applied)
        addresses, at = control.get("addresses"), control.get("addresses_at")
        if not isinstance(addresses, dict) or type(at) is not int or at <= applied:
            return
        known = self._transport.peers()
        for name, raft in itertools.islice(addresses.items(), MAX_ADDRESSES):
            if not isinstance(name, str) or not isinstance(raft, str) or name == self._name or name in known:
                continue
            try:
                address = Address.parse(raft, what="raft")
            except ConfigError:
                log.warning("peer %s told an unreadable address for %.64r: %.64r", peer, name, raft)
                continue
            self._transport.set_peer(name, address)
            self._learned[name] = at
            log.info("reaching %.64s at %s, as %s told (no metadata here names it yet)", name, raft, peer)

    def _forget_passed(self, registered: Mapping[str, NodeInfo], applied: int) -> None:
        for name, at in list(self._learned.items()):
            if name in registered:
                del self._learned[name]  # the metadata names it now
            elif applied >= at:
                del self._learned[name]
                self._transport.remove_peer(name)  # forgotten since it was told of
