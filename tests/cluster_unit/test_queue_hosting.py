"""Hosting queue groups: a node opens the group of every queue listing it (bootstrapped by the initial
members, the placed leader campaigning and the others holding their elections; empty for a member
added later or a wiped one), reopens what its database holds as it was, closes and drops the rest, and
records the arguments its led queues changed at runtime."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cluster.metadata.commands import SetArguments
from cluster.metadata.records import QueueInfo
from cluster.queue_hosting import QueueHosting
from cluster.queue_replica import QueueReplica
from raft_log.storage import NodeStore

ME = "a"
HOLD_TICKS = 20


class Groups:
    """Records what the node's Raft host is asked to do."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def open_group(self, gid: str, app: QueueReplica) -> object:
        self.calls.append(("open", gid))
        return object()

    def close_group(self, gid: str, *, drop: bool) -> None:
        self.calls.append(("close", gid, drop))

    def campaign(self, gid: str) -> None:
        self.calls.append(("campaign", gid))

    def hold_elections(self, gid: str, ticks: int) -> None:
        self.calls.append(("hold", gid, ticks))


def new_door(info: QueueInfo, replica: QueueReplica) -> Any:
    """A stand-in for the queue's `QueueLeader`: following, its arguments as declared."""
    arguments = dict(info.arguments)
    return SimpleNamespace(name=info.name, group=info.group, is_leader=False, definition=lambda: arguments)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[NodeStore]:
    opened = NodeStore.open(tmp_path / "db")
    yield opened
    opened.close()


def hosting_on(store: NodeStore) -> tuple[QueueHosting, Groups]:
    groups = Groups()
    return QueueHosting(ME, store, groups, new_door, HOLD_TICKS), groups


def queue(
    name: str,
    group: str,
    members: list[str],
    initial: list[str] | None = None,
    incarnations: dict[str, str] | None = None,
) -> QueueInfo:
    initial = members if initial is None else initial
    return QueueInfo(name, group, {}, members, 1, initial, initial_incarnations=incarnations or {})


def voters(store: NodeStore, group: str) -> tuple[str, ...]:
    return store.group(group).initial_state()[1].voters


def test_the_placed_leader_bootstraps_the_group_and_campaigns(store: NodeStore) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile([queue("q", "q1", [ME, "b", "c"], incarnations={ME: store.incarnation})])
    assert groups.calls == [("open", "q1"), ("campaign", "q1")]
    assert voters(store, "q1") == (ME, "b", "c") and hosting.queues["q"].group == "q1"


def test_the_other_initial_members_hold_their_elections(store: NodeStore) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile([queue("q", "q1", ["b", ME, "c"])])
    assert groups.calls == [("open", "q1"), ("hold", "q1", HOLD_TICKS)]
    assert voters(store, "q1") == ("b", ME, "c")


def test_a_member_added_later_starts_empty_and_waits_for_the_leader(store: NodeStore) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile([queue("q", "q1", ["b", "c", ME], initial=[])])
    assert groups.calls == [("open", "q1")] and voters(store, "q1") == ()


def test_an_initial_member_whose_database_is_new_since_the_declaration_waits_to_be_added(
    store: NodeStore,
) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile([queue("q", "q1", [ME, "b"], incarnations={ME: "the database before", "b": "ib"})])
    assert groups.calls == [("open", "q1")] and voters(store, "q1") == ()


def test_a_group_the_database_holds_is_reopened_as_it_was(store: NodeStore) -> None:
    hosting_on(store)[0].reconcile([queue("q", "q1", [ME, "b"])])
    restarted, groups = hosting_on(store)
    restarted.reconcile([queue("q", "q1", [ME, "b"])])
    assert groups.calls == [("open", "q1")]


def test_queues_no_longer_listing_this_node_or_declared_again_are_closed_and_dropped(
    store: NodeStore,
) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile(
        [queue("moved", "q1", ["b", ME]), queue("again", "q2", ["b", ME]), queue("kept", "q3", ["b", ME])]
    )
    groups.calls.clear()
    hosting.reconcile([queue("again", "q4", ["b", ME]), queue("kept", "q3", ["b", ME])])
    assert groups.calls == [
        ("close", "q1", True),
        ("close", "q2", True),
        ("open", "q4"),
        ("hold", "q4", HOLD_TICKS),
    ]
    assert {name: door.group for name, door in hosting.queues.items()} == {"again": "q4", "kept": "q3"}


def test_the_arguments_a_led_queue_changed_at_runtime_are_recorded_in_the_metadata(store: NodeStore) -> None:
    hosting, _ = hosting_on(store)
    declared = {info.name: info for info in (queue("led", "q1", [ME]), queue("followed", "q2", ["b", ME]))}
    hosting.reconcile(declared.values())
    assert hosting.changed_arguments(declared) == []
    for door in hosting.queues.values():
        door.definition = lambda: {"x-max-length": 5}
    hosting.queues["led"].is_leader = True
    assert hosting.changed_arguments(declared) == [SetArguments("led", "q1", {"x-max-length": 5})]
    assert hosting.changed_arguments({}) == []  # deleted meanwhile: nothing to record
