"""The queue directory: an undeclared queue is not found, only the leader of a queue's current group
serves it (else NotLeader naming the leader), and declarations and deletions go through the metadata
door to the metadata machine."""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace
from typing import Any

import msgpack
import pytest

import cluster.metadata.metadata_door
import cluster.queues.queue_directory
from cluster.errors import BadRequest, NotLeader, QueueConflict, QueueNotFound
from cluster.metadata.metadata_app import MetadataApp
from cluster.metadata.metadata_door import MetadataDoor
from cluster.metadata.metadata_view import MetadataView
from cluster.queues.queue_directory import QueueDirectory
from cluster.replication.format_versions import FormatVersions
from metadata_state.codec import encode
from metadata_state.commands import Declare, SetArguments
from metadata_state.replies import Reply
from queue_state.arguments import QueueDefaults
from raft_log.types import Entry

ME = "a"


@pytest.fixture(autouse=True)
def _no_wait_for_a_preferred_leader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A declaration waits a while for the placed leader; here any leader will do at once."""
    monkeypatch.setattr(cluster.queues.queue_directory, "PREFERRED_WAIT_S", 0.0)


class MetadataLeader:
    """A Raft host on which this node leads the metadata group: a proposal applies at once."""

    def __init__(self, app: MetadataApp) -> None:
        self.node = ME
        self.app = app
        self.leader: str | None = ME
        self.index = 0

    def submit(self, gid: str, op: Any) -> asyncio.Future[Reply]:
        self.index += 1
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        future.set_result(self.app.apply(Entry(self.index, 1, data=msgpack.packb([op])))[0])
        return future

    def leader_of(self, gid: str) -> str | None:
        return self.leader

    def send_control(self, peer: str, control: dict[str, Any]) -> bool:
        return True


class Cluster:
    """The members and the metadata leader, as `NodeStatus` tells them."""

    def __init__(self, members: list[str]) -> None:
        self.name = ME
        self.members = members
        self.leader: str | None = ME

    def cluster_members(self) -> list[str]:
        return self.members

    def meta_leader(self) -> str | None:
        return self.leader


class Groups:
    """Who leads each group: `leader` for every group."""

    def __init__(self, leader: str | None) -> None:
        self.leader = leader

    def leader_of(self, gid: str) -> str | None:
        return self.leader


def directory(group_leader: str | None = ME) -> tuple[QueueDirectory, dict[str, Any], MetadataView]:
    """A directory on node ME, which leads the metadata group; `group_leader` leads every queue group."""
    queues, hosted, metadata, _, _ = directory_parts(group_leader)
    return queues, hosted, metadata


def directory_parts(
    group_leader: str | None = ME, groups: Groups | None = None, defaults: QueueDefaults | None = None
) -> tuple[QueueDirectory, dict[str, Any], MetadataView, MetadataLeader, Cluster]:
    app = MetadataApp(lambda: None)
    metadata = MetadataView(app)
    host, cluster = MetadataLeader(app), Cluster([ME, "b", "c"])
    formats = FormatVersions(ME, lambda: [ME], lambda peer: True)  # no other node: the newest versions
    door = MetadataDoor(host, "meta", formats)
    hosted: dict[str, Any] = {}
    queues = QueueDirectory(
        metadata,
        hosted,
        groups or Groups(group_leader),
        cluster,
        door,
        lambda: 1000,
        formats,
        defaults or QueueDefaults(),
    )
    return queues, hosted, metadata, host, cluster


def hosted_door(group: str, is_leader: bool) -> Any:
    return SimpleNamespace(group=group, is_leader=is_leader)


async def test_an_undeclared_queue_is_not_found() -> None:
    queues, _, _ = directory()
    for ask in (queues.info, queues.leader_of, queues.leading_door):
        with pytest.raises(QueueNotFound):
            ask("nope")
    with pytest.raises(QueueNotFound):
        await queues.delete("nope")


async def test_the_leader_of_a_queue_gets_its_door() -> None:
    queues, hosted, metadata = directory()
    assert await queues.declare("q", {}, client_node=ME) == "created"
    hosted["q"] = door = hosted_door(metadata.queues["q"].group, is_leader=True)
    assert queues.leading_door("q") is door and queues.leading_doors() == [door]
    assert queues.hosted_door("q") is door


async def test_a_follower_answers_not_leader_naming_the_leader() -> None:
    queues, hosted, metadata = directory(group_leader="b")
    await queues.declare("q", {}, client_node=ME)
    hosted["q"] = follower = hosted_door(metadata.queues["q"].group, is_leader=False)
    with pytest.raises(NotLeader) as refused:
        queues.leading_door("q")
    assert refused.value.leader == "b"
    assert queues.leader_of("q") == "b" and queues.leading_doors() == []
    assert queues.hosted_door("q") is follower


async def test_a_node_without_a_replica_answers_not_leader_naming_the_leader() -> None:
    queues, _, _ = directory(group_leader="c")
    await queues.declare("q", {}, client_node=ME)
    with pytest.raises(NotLeader) as refused:
        queues.leading_door("q")
    assert refused.value.leader == "c" and queues.hosted_door("q") is None


async def test_the_leader_of_a_deleted_and_declared_again_queue_does_not_serve_the_new_one() -> None:
    queues, hosted, metadata = directory()
    await queues.declare("q", {}, client_node=ME)
    old_group = metadata.queues["q"].group
    await queues.delete("q")
    await queues.declare("q", {}, client_node=ME)
    assert metadata.queues["q"].group != old_group
    hosted["q"] = hosted_door(old_group, is_leader=True)  # not yet reconciled
    with pytest.raises(NotLeader):
        queues.leading_door("q")


async def test_a_declaration_is_created_then_exists_and_conflicts_with_other_arguments() -> None:
    queues, _, metadata = directory()
    assert await queues.declare("q", {"x-max-length": 10}, client_node="b") == "created"
    info = metadata.queues["q"]
    assert info.members[0] == "b" and sorted(info.members) == [ME, "b", "c"] and info.created_ms == 1000
    assert await queues.declare("q", {"x-max-length": 10}, client_node=ME) == "exists"
    with pytest.raises(QueueConflict):
        await queues.declare("q", {"x-max-length": 11}, client_node=ME)
    assert queues.names() == ["q"]


async def test_invalid_arguments_are_refused_before_anything_is_proposed() -> None:
    queues, _, metadata = directory()
    with pytest.raises(BadRequest, match="x-max-length"):
        await queues.declare("q", {"x-max-length": "ten"}, client_node=ME)
    assert queues.names() == [] and metadata.queues == {}


async def test_a_sealed_queue_is_deleted_through_the_metadata() -> None:
    queues, _, metadata = directory()
    await queues.declare("q", {}, client_node=ME)
    await queues.delete_sealed("q", metadata.queues["q"].group)
    assert queues.names() == []


async def test_a_sealed_queue_the_metadata_does_not_delete_in_time_is_not_leader_naming_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queues, _, metadata, host, members = directory_parts()
    await queues.declare("q", {}, client_node=ME)
    host.leader = members.leader = None  # the metadata leader is lost: relays are dropped
    monkeypatch.setattr(cluster.metadata.metadata_door, "METADATA_WAIT_S", 0.1)
    with pytest.raises(NotLeader) as refused:
        await queues.delete_sealed("q", metadata.queues["q"].group)
    assert refused.value.leader is None and queues.names() == ["q"]


async def test_a_known_queue_without_a_known_leader_waits_for_one_rule_no_503_right_after_declare() -> None:
    """Right after a declare (or during a failover) a node may know a queue but not yet its leader: a
    request waits a while for one to be known instead of answering 503 at once."""
    groups = Groups(ME)
    queues = directory_parts(groups=groups)[0]
    await queues.declare("q", {}, client_node=ME)
    groups.leader = None  # this node has not heard from the group's leader yet
    asyncio.get_running_loop().call_later(0.1, setattr, groups, "leader", "b")
    assert await queues.leader_within("q", timeout=5.0) == "b"
    groups.leader = None
    assert await queues.leader_within("q", timeout=0.1) is None
    with pytest.raises(QueueNotFound):
        await queues.leader_within("nope", timeout=5.0)


async def test_a_node_elected_but_not_serving_yet_names_no_leader_rule_no_503_right_after_declare() -> None:
    """Raft may name this node leader a moment before its door leads the queue (the election's outcome
    is handled after): until then it names no leader, so a request waits rather than being refused."""
    queues, hosted, metadata = directory(group_leader=ME)
    await queues.declare("q", {}, client_node=ME)
    door = hosted["q"] = hosted_door(metadata.queues["q"].group, is_leader=False)
    assert queues.leader_of("q") is None
    door.is_leader = True
    assert queues.leader_of("q") == ME


async def test_rule_a_queue_declared_without_a_delivery_limit_gets_the_default_of_20() -> None:
    queues, _, metadata = directory()
    assert await queues.declare("q", {}, client_node=ME) == "created"
    assert metadata.queues["q"].arguments == {"x-queue-type": "quorum", "x-delivery-limit": 20}
    assert await queues.declare("q", {}, client_node=ME) == "exists"  # compared after the default
    assert await queues.declare("q", {"x-delivery-limit": 20}, client_node=ME) == "exists"
    with pytest.raises(QueueConflict):
        await queues.declare("q", {"x-delivery-limit": 5}, client_node=ME)
    await queues.declare("unlimited", {"x-delivery-limit": -1}, client_node=ME)
    assert metadata.queues["unlimited"].arguments["x-delivery-limit"] == -1


async def test_rule_a_queue_declared_before_the_default_keeps_no_limit_and_redeclares_as_it_was() -> None:
    queues, _, metadata, host, _ = directory_parts()
    before = Declare("old", {"x-queue-type": "quorum"}, (ME,), 1)  # as a node before the default wrote it
    host.submit("meta", encode(before))
    assert await queues.declare("old", {}, client_node=ME) == "exists"
    assert metadata.queues["old"].arguments == {"x-queue-type": "quorum"}
    with pytest.raises(QueueConflict):
        await queues.declare("old", {"x-delivery-limit": 20}, client_node=ME)  # it has none


async def test_rule_a_nodes_defaults_are_stored_with_a_queue_declared_without_those_arguments() -> None:
    defaults = QueueDefaults(delivery_limit=-1, initial_group_size=2, leader_locator="balanced")
    queues, _, metadata, _, _ = directory_parts(defaults=defaults)
    assert await queues.declare("q", {"x-quorum-initial-group-size": 3}, client_node=ME) == "created"
    assert metadata.queues["q"].arguments == {
        "x-queue-type": "quorum",
        "x-quorum-initial-group-size": 3,  # given: the default does not replace it
        "x-queue-leader-locator": "balanced",
        "x-delivery-limit": -1,
    }
    assert len(metadata.queues["q"].members) == 3
    assert await queues.declare("q", {"x-quorum-initial-group-size": 3}, client_node=ME) == "exists"
    assert await queues.declare("q", {"x-queue-leader-locator": "balanced"}, client_node=ME) == "exists"
    with pytest.raises(QueueConflict):
        await queues.declare("q", {"x-queue-leader-locator": "client-local"}, client_node=ME)
    assert await queues.declare("small", {}, client_node=ME) == "created"
    assert len(metadata.queues["small"].members) == 2


async def test_rule_a_redeclare_matches_a_queue_declared_under_other_defaults() -> None:
    """Another node, or this one before its settings changed, gave the queue other defaults (or none):
    a redeclare that leaves those arguments out still finds it."""
    queues, _, metadata, host, _ = directory_parts(
        defaults=QueueDefaults(delivery_limit=7, initial_group_size=1)
    )
    other = Declare("q", {"x-queue-type": "quorum", "x-delivery-limit": 20}, (ME,), 1)
    host.submit("meta", encode(other))
    assert await queues.declare("q", {}, client_node=ME) == "exists"
    assert metadata.queues["q"].arguments == {"x-queue-type": "quorum", "x-delivery-limit": 20}
    with pytest.raises(QueueConflict):
        await queues.declare("q", {"x-message-ttl": 5}, client_node=ME)  # an argument it was not given


async def test_rule_a_redeclare_follows_stored_arguments_that_change_while_it_retries() -> None:
    """The stored arguments may change between a conflict and the declare sent again as stored (a
    runtime change copied into the metadata): the declare follows them rather than answering 409."""
    queues, _, metadata, host, _ = directory_parts(defaults=QueueDefaults(delivery_limit=7))
    host.submit("meta", encode(Declare("q", {"x-queue-type": "quorum", "x-delivery-limit": 20}, (ME,), 1)))
    group = metadata.queues["q"].group
    declare = queues._door.declare
    changes = iter([{"x-queue-type": "quorum", "x-delivery-limit": 5}])

    async def a_change_lands_after_each_answer(*args: Any) -> Any:
        reply = await declare(*args)
        for arguments in itertools.islice(changes, 1):
            host.submit("meta", encode(SetArguments("q", group, arguments)))
        return reply

    queues._door.declare = a_change_lands_after_each_answer  # type: ignore[method-assign]
    assert await queues.declare("q", {}, client_node=ME) == "exists"
    assert metadata.queues["q"].arguments["x-delivery-limit"] == 5
