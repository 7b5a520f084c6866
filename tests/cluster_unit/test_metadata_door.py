"""The metadata door: which codec version it writes and relays in, and that a metadata leader proposes
what older and newer nodes relay to it (a rolling upgrade in both directions)."""

from __future__ import annotations

import asyncio
from typing import Any

from cluster.metadata.metadata_door import MetadataDoor
from cluster.replication.format_versions import FormatVersions
from metadata_state.codec import decode
from metadata_state.commands import Delete, RegisterNode, SetArguments, SetMembers
from metadata_state.replies import Ok

MEMBERS = ("a", "b", "c")


class FakeHost:
    """A Raft host that records what it is asked to propose and to send."""

    def __init__(self, node: str, leader: str | None) -> None:
        self.node = node
        self.leader = leader
        self.proposed: list[Any] = []
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def submit(self, gid: str, op: Any) -> asyncio.Future[Any]:
        self.proposed.append(op)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(Ok())
        return future

    def leader_of(self, gid: str) -> str | None:
        return self.leader

    def send_control(self, peer: str, control: dict[str, Any]) -> bool:
        self.sent.append((peer, control))
        return True


def door_on(node: str, leader: str | None) -> tuple[MetadataDoor, FakeHost, FormatVersions]:
    """The door of `node`, its host, and what its peers said they read (`formats.on_control`)."""
    host = FakeHost(node, leader)
    formats = FormatVersions(node, lambda: MEMBERS, lambda peer: True)  # every peer linked
    return MetadataDoor(host, "meta", formats), host, formats


async def test_the_leader_writes_version_0_until_every_other_member_said_it_reads_the_codec() -> None:
    door, host, formats = door_on("a", "a")
    assert await door.delete("q", "q1.q") == Ok()
    formats.on_control("b", {"metadata_codec": 1})
    await door.delete("q", "q1.q")
    formats.on_control("c", {"metadata_codec": 1})
    await door.delete("q", "q1.q")
    assert host.proposed == [
        ["delete", "q", "q1.q"],
        ["delete", "q", "q1.q"],
        [1, "delete", {"queue": "q", "group": "q1.q"}],
    ]


async def test_a_relay_reaches_a_leader_that_reads_the_codec_as_one_encoded_command() -> None:
    door, host, formats = door_on("b", "a")
    formats.on_control("a", {"metadata_codec": 1})
    door.relay(SetMembers("q", "q1.q", ("a", "b"), (2, 1)))
    assert host.sent == [
        (
            "a",
            {
                "metadata": [
                    1,
                    "set_members",
                    {"queue": "q", "group": "q1.q", "members": ["a", "b"], "fence": [2, 1]},
                ]
            },
        )
    ]
    assert host.proposed == []


async def test_a_relay_reaches_an_older_leader_under_the_key_it_reads() -> None:
    door, host, _ = door_on("b", "a")
    door.relay(RegisterNode("b", "http://b:1", "b:2", "inc"))
    door.relay(SetArguments("q", "q1.q", {"x-max-length": 5}))
    door.relay(Delete("q", "q1.q"))
    door.relay(SetMembers("q", "q1.q", ("a", "b"), (2, 1)))
    assert [control for _, control in host.sent] == [
        {"register": ["b", "http://b:1", "b:2", "inc"]},
        {"set_arguments": ["q", "q1.q", {"x-max-length": 5}]},
        {"expire": ["q", "q1.q"]},
        {"set_members": ["q", "q1.q", ["a", "b"], [2, 1]]},
    ]


async def test_the_leader_proposes_relays_from_newer_and_older_nodes() -> None:
    door, host, _ = door_on("a", "a")
    door.on_control("b", {"metadata": [1, "delete", {"queue": "q", "group": "q1.q"}]})
    door.on_control("c", {"register": ["c", "http://c:1", "c:2"]})  # a node older than incarnations
    door.on_control("c", {"set_members": ["q", "q1.q", ["a", "c"]]})  # older than fences
    door.on_control("c", {"expire": ["q", "q1.q"], "set_arguments": ["q", "q1.q", {}]})
    assert [decode(op) for op in host.proposed] == [
        Delete("q", "q1.q"),
        RegisterNode("c", "http://c:1", "c:2"),
        SetMembers("q", "q1.q", ("a", "c")),
        SetArguments("q", "q1.q", {}),
        Delete("q", "q1.q"),
    ]


async def test_a_follower_proposes_nothing_it_is_relayed_and_a_malformed_relay_is_dropped() -> None:
    follower, host, _ = door_on("b", "a")
    follower.on_control("c", {"metadata": [1, "delete", {"queue": "q", "group": "q1.q"}]})
    assert host.proposed == []
    leader, host, _ = door_on("a", "a")
    leader.on_control("c", {"metadata": [1, "delete", {"queue": 7}], "expire": "q"})
    assert host.proposed == []
