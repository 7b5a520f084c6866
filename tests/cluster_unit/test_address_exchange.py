"""Raft addresses passed between peers (`AddressExchange`): a node whose metadata lags (a seed wiped and
started from its seeds, a node down while the metadata leader joined) learns from a peer ahead of it
where the nodes it does not know are, so that it can answer that leader (whole-node seeds 1129, 3077);
a peer behind it cannot bring back a name its metadata forgot."""

from __future__ import annotations

from cluster.config import Address
from cluster.replication.address_exchange import MAX_ADDRESSES, AddressExchange
from metadata_state.records import NodeInfo


class Links:
    """The transport as the exchange sees it: the peers it knows and where."""

    def __init__(self, known: dict[str, Address]) -> None:
        self.known = dict(known)

    def peers(self) -> dict[str, bool]:
        return dict.fromkeys(self.known, True)

    def set_peer(self, name: str, address: Address) -> None:
        self.known[name] = address

    def remove_peer(self, name: str) -> None:
        self.known.pop(name, None)


def info(name: str) -> NodeInfo:
    return NodeInfo(name, f"http://{name}:1", f"{name}:7000", f"{name}.0")


class Metadata:
    """This node's metadata as the exchange reads it: the registry, the index applied and the metadata
    group's members."""

    def __init__(self, names: list[str], applied: int, members: tuple[str, ...] = ()) -> None:
        self.nodes = {name: info(name) for name in names}
        self.applied = applied
        self.members = members

    def exchange(self, name: str, links: Links) -> AddressExchange:
        return AddressExchange(name, lambda: self.nodes, lambda: self.applied, lambda: self.members, links)


def told(at: int, *names: str) -> dict[str, object]:
    return {"addresses": {name: f"{name}:7000" for name in names}, "addresses_at": at}


def test_a_node_tells_every_registered_address_and_the_index_it_applied() -> None:
    metadata = Metadata(["n1", "n2", "n5"], 40)
    assert metadata.exchange("n2", Links({})).announcement() == told(40, "n1", "n2", "n5")


def test_a_node_tells_its_seeds_beside_the_registered_nodes() -> None:
    exchange = Metadata(["n1", "n2"], 7).exchange("n1", Links({}))
    exchange.know_seeds({"n1": Address("n1", 7000), "n3": Address("n3", 7000)})
    assert exchange.announcement() == told(7, "n3", "n1", "n2")


def test_a_member_of_the_metadata_group_is_taken_from_any_peer_and_dropped_when_it_leaves() -> None:
    """n3, a seed, never registered (it was down); n5 joined later and leads: only the other seeds know
    where n3 is, and they are not ahead of the leader (whole-node seed 1900)."""
    metadata = Metadata(["n1", "n5"], 50, members=("n1", "n3", "n5"))
    links = Links({"n1": Address("n1", 7000)})
    exchange = metadata.exchange("n5", links)
    exchange.on_control("n1", told(40, "n3", "n9"))
    assert set(links.known) == {"n1", "n3"}  # n9 is no member: not from a peer behind
    metadata.members = ("n1", "n5")
    exchange.on_control("n1", {})
    assert set(links.known) == {"n1"}


def test_a_lagging_node_learns_from_a_peer_ahead_the_names_it_does_not_know() -> None:
    links = Links({"n2": Address("elsewhere", 1)})
    Metadata(["n1", "n2"], 10).exchange("n1", links).on_control("n2", told(30, "n1", "n2", "n5"))
    assert links.known == {"n2": Address("elsewhere", 1), "n5": Address("n5", 7000)}


def test_a_peer_not_ahead_brings_back_no_name_this_node_forgot() -> None:
    """The metadata leader forgot n5; a follower that has not applied that yet still names it."""
    links = Links({"n2": Address("n2", 7000)})
    Metadata(["n1", "n2"], 30).exchange("n1", links).on_control("n2", told(25, "n1", "n2", "n5"))
    assert "n5" not in links.known


def test_a_name_forgotten_and_registered_again_is_taken_from_a_peer_ahead() -> None:
    """n5 joined again while this node lagged, and now leads the metadata: a peer ahead names it."""
    links = Links({"n2": Address("n2", 7000)})
    Metadata(["n1", "n2"], 30).exchange("n1", links).on_control("n2", told(45, "n2", "n5"))
    assert links.known["n5"] == Address("n5", 7000)


def test_a_name_taken_is_dropped_once_the_metadata_passed_its_index_without_it() -> None:
    metadata = Metadata(["n1", "n2"], 10)
    links = Links({"n2": Address("n2", 7000)})
    exchange = metadata.exchange("n1", links)
    exchange.on_control("n2", told(30, "n2", "n5", "n6"))
    metadata.applied, metadata.nodes["n5"] = 31, info("n5")  # n5 registered; n6 forgotten meanwhile
    exchange.on_control("n2", {})
    assert set(links.known) == {"n2", "n5"}


def test_addresses_that_do_not_parse_and_names_beyond_the_cap_are_skipped() -> None:
    links = Links({})
    exchange = Metadata([], 0).exchange("n1", links)
    exchange.on_control("n2", {"addresses": {"n7": "h:\u00b2", "n8": "n8:1"}, "addresses_at": 5})
    assert links.known == {"n8": Address("n8", 1)}
    many = {f"x{i}": f"x{i}:1" for i in range(MAX_ADDRESSES + 10)}
    exchange.on_control("n2", {"addresses": many, "addresses_at": 5})
    assert len(links.known) == 1 + MAX_ADDRESSES


def test_a_frame_without_addresses_or_index_changes_nothing() -> None:
    links = Links({"n2": Address("n2", 7000)})
    exchange = Metadata([], 0).exchange("n1", links)
    exchange.on_control("n2", {"queue_codec": 9, "addresses": {"n5": "n5:7000"}})
    exchange.on_control("n2", {"addresses": ["n5:7000"], "addresses_at": 3})
    assert links.known == {"n2": Address("n2", 7000)}
