"""Raft addresses passed between peers (`AddressExchange`): a node whose metadata does not list a peer
yet (a seed wiped and started from its seeds, the metadata leader a node that joined later) learns where
it is from a peer, so that it can answer that leader (whole-node seed 1129)."""

from __future__ import annotations

from cluster.address_exchange import AddressExchange
from cluster.config import Address
from cluster.metadata.records import NodeInfo


class Links:
    """The transport as the exchange sees it: known peers, proved incarnations, addresses set."""

    def __init__(self, known: dict[str, Address], proved: dict[str, str]) -> None:
        self.known = dict(known)
        self.proved = proved

    def peers(self) -> dict[str, bool]:
        return dict.fromkeys(self.known, True)

    def peer_incarnation(self, name: str) -> str:
        return self.proved.get(name, "")

    def set_peer(self, name: str, address: Address) -> None:
        self.known[name] = address


REGISTRY = {
    "n1": NodeInfo("n1", "http://n1:1", "n1:7000", "n1.0"),
    "n2": NodeInfo("n2", "http://n2:1", "n2:7000", "n2.0"),
    "n5": NodeInfo("n5", "http://n5:1", "n5:7000", "n5.1"),
}


def test_a_peer_running_as_a_registered_incarnation_is_told_nothing() -> None:
    links = Links({"n1": Address("n1", 7000)}, {"n1": "n1.0"})
    assert AddressExchange("n2", lambda: REGISTRY, links).announcement("n1") == {}


def test_a_peer_running_as_an_unregistered_incarnation_is_told_every_registered_address() -> None:
    links = Links({"n1": Address("n1", 7000)}, {"n1": "n1.1"})
    told = AddressExchange("n2", lambda: REGISTRY, links).announcement("n1")
    assert told == {"addresses": {"n1": "n1:7000", "n2": "n2:7000", "n5": "n5:7000"}}


def test_a_node_without_metadata_learns_the_names_it_does_not_know() -> None:
    links = Links({"n2": Address("n2", 7000)}, {})
    exchange = AddressExchange("n1", dict, links)
    exchange.on_control("n2", {"addresses": {"n1": "n1:9", "n2": "elsewhere:1", "n5": "n5:7000", "x": "::"}})
    assert links.known == {"n2": Address("n2", 7000), "n5": Address("n5", 7000)}


def test_a_node_its_metadata_registers_takes_no_address_from_a_peer() -> None:
    links = Links({"n2": Address("n2", 7000)}, {})
    AddressExchange("n1", lambda: REGISTRY, links).on_control("n2", {"addresses": {"n9": "n9:7000"}})
    assert links.known == {"n2": Address("n2", 7000)}
