"""Raft addresses passed between peers (`AddressExchange`): a node whose metadata does not list a peer
yet (a seed wiped and started from its seeds, a node that was down while the metadata leader joined)
learns where it is from another peer, so that it can answer that leader (whole-node seeds 1129, 3077)."""

from __future__ import annotations

from cluster.config import Address
from cluster.replication.address_exchange import AddressExchange
from metadata_state.records import NodeInfo


class Links:
    """The transport as the exchange sees it: the peers it knows and where."""

    def __init__(self, known: dict[str, Address]) -> None:
        self.known = dict(known)

    def peers(self) -> dict[str, bool]:
        return dict.fromkeys(self.known, True)

    def set_peer(self, name: str, address: Address) -> None:
        self.known[name] = address


REGISTRY = {
    "n1": NodeInfo("n1", "http://n1:1", "n1:7000", "n1.0"),
    "n2": NodeInfo("n2", "http://n2:1", "n2:7000", "n2.0"),
    "n5": NodeInfo("n5", "http://n5:1", "n5:7000", "n5.1"),
}


def test_a_node_tells_every_registered_address() -> None:
    told = AddressExchange("n2", lambda: REGISTRY, Links({})).announcement()
    assert told == {"addresses": {"n1": "n1:7000", "n2": "n2:7000", "n5": "n5:7000"}}


def test_a_node_learns_the_names_it_does_not_know_and_keeps_those_it_does() -> None:
    links = Links({"n2": Address("n2", 7000)})
    exchange = AddressExchange("n1", lambda: {"n1": REGISTRY["n1"], "n2": REGISTRY["n2"]}, links)
    exchange.on_control("n2", {"addresses": {"n1": "n1:9", "n2": "elsewhere:1", "n5": "n5:7000", "x": "::"}})
    assert links.known == {"n2": Address("n2", 7000), "n5": Address("n5", 7000)}


def test_a_control_frame_without_addresses_changes_nothing() -> None:
    links = Links({"n2": Address("n2", 7000)})
    AddressExchange("n1", dict, links).on_control("n2", {"queue_codec": 9, "addresses": ["n5:7000"]})
    assert links.known == {"n2": Address("n2", 7000)}


def test_a_name_this_nodes_metadata_forgot_is_not_taken_from_a_lagging_peer() -> None:
    """The metadata leader forgot n5; a follower that has not applied that yet still announces it."""
    registry = dict(REGISTRY)
    links = Links({"n2": Address("n2", 7000)})
    exchange = AddressExchange("n1", lambda: registry, links)
    exchange.on_control("n2", {})
    del registry["n5"]
    exchange.on_control("n2", {"addresses": {"n5": "n5:7000"}})
    assert "n5" not in links.known


def test_an_address_that_does_not_parse_is_skipped() -> None:
    links = Links({})
    AddressExchange("n1", dict, links).on_control("n2", {"addresses": {"n7": "h:\u00b2", "n8": "n8:1"}})
    assert links.known == {"n8": Address("n8", 1)}
