"""Leader announcements: whole maps, then only what changed, and hints that last while their peer is heard."""

from __future__ import annotations

from typing import Any

from cluster.replication.leader_hints import (
    CHANGES_KEY,
    LEADERS_KEY,
    READS_CHANGES_KEY,
    WHOLE_EVERY,
    LeaderHints,
)


class Wire:
    """Announcements from node `a` to its peers, delivered to each peer's `LeaderHints`."""

    def __init__(self, peers: dict[str, LeaderHints]) -> None:
        self.peers = peers
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.up = True

    def send(self, peer: str, control: dict[str, Any]) -> bool:
        if not self.up:
            return False
        self.sent.append((peer, dict(control)))
        self.peers[peer].learn("a", control)
        return True


def test_a_peer_that_reads_changes_gets_the_whole_map_once_then_only_what_changed() -> None:
    a = LeaderHints("a", lambda peer: True)
    b = LeaderHints("b", lambda peer: True)
    a.learn("b", {LEADERS_KEY: {}, READS_CHANGES_KEY: 1})  # b said it reads changes
    wire = Wire({"b": b})

    a.announce({"g1": 3, "g2": 5}, {"b": True}, wire.send)
    assert wire.sent[-1][1] == {LEADERS_KEY: {"g1": ["a", 3], "g2": ["a", 5]}, READS_CHANGES_KEY: 1}
    assert b.leader("g1") == b.leader("g2") == "a"

    wire.sent.clear()
    for _ in range(5):
        a.announce({"g1": 3, "g2": 5}, {"b": True}, wire.send)
    assert wire.sent == []  # nothing changed: nothing sent

    a.announce({"g1": 3, "g3": 7}, {"b": True}, wire.send)
    assert wire.sent == [("b", {CHANGES_KEY: {"g3": ["a", 7], "g2": None}})]
    assert (b.leader("g1"), b.leader("g2"), b.leader("g3")) == ("a", None, "a")


def test_an_older_peer_gets_the_whole_map_every_time() -> None:
    a = LeaderHints("a", lambda peer: True)
    b = LeaderHints("b", lambda peer: True)
    a.learn("b", {LEADERS_KEY: {}})  # an older build: it does not say it reads changes
    wire = Wire({"b": b})
    for _ in range(3):
        a.announce({"g1": 3}, {"b": True}, wire.send)
    whole = {LEADERS_KEY: {"g1": ["a", 3]}, READS_CHANGES_KEY: 1}
    assert [control for _, control in wire.sent] == [whole] * 3


def test_the_whole_map_again_after_a_failed_send_a_lost_link_and_every_so_often() -> None:
    a = LeaderHints("a", lambda peer: True)
    b = LeaderHints("b", lambda peer: True)
    a.learn("b", {LEADERS_KEY: {}, READS_CHANGES_KEY: 1})
    wire = Wire({"b": b})
    a.announce({"g1": 3}, {"b": True}, wire.send)

    wire.up = False
    a.announce({"g1": 3, "g2": 4}, {"b": True}, wire.send)  # lost
    wire.up = True
    a.announce({"g1": 3, "g2": 4}, {"b": True}, wire.send)
    assert LEADERS_KEY in wire.sent[-1][1] and b.leader("g2") == "a"

    a.link_lost("b")
    a.learn("b", {LEADERS_KEY: {}, READS_CHANGES_KEY: 1})
    a.announce({"g1": 3, "g2": 4}, {"b": True}, wire.send)
    assert LEADERS_KEY in wire.sent[-1][1]

    wire.sent.clear()
    a.announce({"g1": 3, "g2": 4, "g3": 5}, {"b": False}, wire.send)  # queued frames may be dropped
    assert wire.sent == []
    a.announce({"g1": 3, "g2": 4, "g3": 5}, {"b": True}, wire.send)
    assert LEADERS_KEY in wire.sent[-1][1] and b.leader("g3") == "a"

    wire.sent.clear()
    for _ in range(WHOLE_EVERY + 1):
        a.announce({"g1": 3, "g2": 4, "g3": 5}, {"b": True}, wire.send)
    assert [LEADERS_KEY in control for _, control in wire.sent] == [True]


def test_a_hint_counts_while_its_peer_is_heard_and_a_higher_term_wins() -> None:
    heard = {"a": True, "c": True}
    b = LeaderHints("b", lambda peer: heard[peer])
    b.learn("a", {LEADERS_KEY: {"g1": ["a", 3]}, READS_CHANGES_KEY: 1})
    assert b.leader("g1") == "a"
    heard["a"] = False
    assert b.leader("g1") is None
    heard["a"] = True

    b.learn("c", {CHANGES_KEY: {"g1": ["c", 4]}})
    assert b.leader("g1") == "c"
    b.learn("a", {CHANGES_KEY: {"g1": None}})  # a's step-down does not drop c's newer hint
    assert b.leader("g1") == "c"
    b.learn("a", {LEADERS_KEY: {"g1": ["a", 3]}})  # an older term does not replace it
    assert b.leader("g1") == "c"
    b.learn("c", {LEADERS_KEY: {}})  # a whole map drops what c no longer leads
    assert b.leader("g1") is None


def test_learning_takes_only_its_own_keys_and_refuses_a_malformed_announcement() -> None:
    b = LeaderHints("b", lambda peer: True)
    control: dict[str, Any] = {LEADERS_KEY: {}, READS_CHANGES_KEY: 1, "alarms": []}
    b.learn("a", control)
    assert control == {"alarms": []}
    for bad in ({LEADERS_KEY: [1]}, {CHANGES_KEY: "x"}, {CHANGES_KEY: {"g1": ["a"]}}):
        try:
            b.learn("a", dict(bad))
        except (TypeError, ValueError):
            continue
        raise AssertionError(f"{bad} was taken")
