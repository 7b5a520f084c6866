"""Raft addresses passed between peers, for a node whose metadata does not list them yet.

A node reaches its peers at the addresses its metadata registers (and, before that, at its seeds'). One
whose metadata lags knows no node registered since: a seed wiped and started again from its seeds, a
node that was down while another joined. The transport links only peers it knows (a hello from any
other name is refused), so such a node could neither answer a metadata leader among those nodes nor
receive the metadata that would name it.

Each node therefore tells its peers, with the formats it reads, the Raft address of every node its
metadata registers or it has as a seed, and the metadata index it applied. A node takes a name it does
not know from a peer ahead of it: that peer applied everything this node did, so a name it names was
not forgotten since (or was registered again), and a name this node's own metadata forgot is never
taken back from a peer that lags; such a name is dropped again once this node's metadata reached the
index it was told at without registering it. It also takes, from any peer, a name its own metadata
group lists as a member: a seed that never registered (it was down when the others registered) is
known only to the other seeds, and a leader that joined later could never reach it (nor the seed it);
such a name is dropped once the group no longer lists it. Control frame keys: `{"addresses": {name:
"host:port"}, "addresses_at": index}`; nodes of an earlier version ignore them.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from cluster.config import Address, ConfigError
from metadata_state.records import NodeInfo

log = logging.getLogger(__name__)

MAX_ADDRESSES = 1024  # names read from one frame at most


class AddressedPeers(Protocol):
    """The transport: the peers it knows and where it reaches each."""

    def peers(self) -> dict[str, bool]: ...

    def set_peer(self, name: str, address: Address) -> None: ...

    def remove_peer(self, name: str) -> None: ...


class AddressExchange:
    """The addresses node `name` tells its peers and learns from them; `registered` gives the metadata's
    node registry as this node applied it, `applied` the metadata index it applied, `members` the
    metadata group's voters and learners."""

    def __init__(
        self,
        name: str,
        registered: Callable[[], Mapping[str, NodeInfo]],
        applied: Callable[[], int],
        members: Callable[[], Collection[str]],
        transport: AddressedPeers,
    ) -> None:
        self._name = name
        self._registered = registered
        self._applied = applied
        self._members = members
        self._transport = transport
        self._seeds: dict[str, str] = {}
        # name taken from a peer -> the index that peer had applied (None: taken as a member of the group)
        self._learned: dict[str, int | None] = {}

    def know_seeds(self, seeds: Mapping[str, Address]) -> None:
        """The seeds this node started with (`node.json`), told to peers beside the registered nodes."""
        self._seeds = {name: str(address) for name, address in seeds.items() if name != self._name}

    def announcement(self) -> dict[str, Any]:
        """What to tell a peer: the seeds' and every registered node's address, and the index this node
        applied."""
        addresses = self._seeds | {node.name: node.raft for node in self._registered().values()}
        return {"addresses": addresses, "addresses_at": self._applied()}

    def on_control(self, peer: str, control: Mapping[str, Any]) -> None:
        """Drop the names taken earlier that this node's metadata has since passed by, then take those
        `peer` told of that the transport does not know: any if `peer` is ahead of this node, else only
        members of the metadata group."""
        registered, applied, members = self._registered(), self._applied(), frozenset(self._members())
        self._forget_passed(registered, applied, members)
        addresses, at = control.get("addresses"), control.get("addresses_at")
        if not isinstance(addresses, dict) or type(at) is not int:
            return
        ahead = at > applied
        known = self._transport.peers()
        for name, raft in itertools.islice(addresses.items(), MAX_ADDRESSES):
            if not isinstance(name, str) or not isinstance(raft, str) or name == self._name or name in known:
                continue
            if not ahead and name not in members:
                continue
            try:
                address = Address.parse(raft, what="raft")
            except ConfigError:
                log.warning("peer %s told an unreadable address for %.64r: %.64r", peer, name, raft)
                continue
            self._transport.set_peer(name, address)
            self._learned[name] = at if ahead else None
            log.info("reaching %.64s at %s, as %s told (no metadata here names it yet)", name, raft, peer)

    def _forget_passed(
        self, registered: Mapping[str, NodeInfo], applied: int, members: frozenset[str]
    ) -> None:
        for name, at in list(self._learned.items()):
            if name in registered:
                del self._learned[name]  # the metadata names it now
            elif (applied >= at) if at is not None else (name not in members):
                del self._learned[name]
                self._transport.remove_peer(name)  # forgotten since it was told of
