"""Hosting queue groups: a node opens the group of every queue listing it (bootstrapped by the initial
members, the placed leader campaigning and the others holding their elections; empty for a member
added later or a wiped one), reopens what its database holds as it was, drops the replicas of deleted
queues and of groups that removed it (only once the metadata is replayed; before, it opens only what
its database holds), and records the arguments its led queues changed at runtime."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from cluster.queues.queue_hosting import STALE_VISITS, QueueHosting
from cluster.queues.queue_replica import QueueReplica
from metadata_state.commands import SetArguments
from metadata_state.records import NodeInfo, QueueInfo
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState

ME = "a"
HOLD_TICKS = 20


class Groups:
    """Records what the node's Raft host is asked to do."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.removed: set[str] = set()  # groups whose membership no longer lists this node

    def open_group(self, gid: str, app: QueueReplica) -> object:
        self.calls.append(("open", gid))
        return object()

    def lists_member(self, gid: str, node: str) -> bool:
        return node == ME and gid not in self.removed

    def close_group(self, gid: str, *, drop: bool, tombstone: bool = True) -> None:
        self.calls.append(("close", gid, drop, tombstone))

    def campaign(self, gid: str) -> None:
        self.calls.append(("campaign", gid))

    def hold_elections(self, gid: str, ticks: int) -> None:
        self.calls.append(("hold", gid, ticks))


class Door(SimpleNamespace):
    """A stand-in for the queue's `QueueDoor` (one a weak reference can follow)."""


def new_door(info: QueueInfo, replica: QueueReplica) -> Any:
    """A stand-in for the queue's `QueueDoor`: following, its arguments as declared."""
    return Door(
        name=info.name,
        group=info.group,
        is_leader=False,
        serving=False,
        declared_config=Config(dict(info.arguments)),
        on_timer=lambda: None,
    )


class Config:
    """A stand-in for a replica's applied `QueueConfig`, counting how often it is read as arguments."""

    def __init__(self, arguments: dict[str, Any]) -> None:
        self.arguments = arguments
        self.read = 0

    def to_arguments(self) -> dict[str, Any]:
        self.read += 1
        return self.arguments


def hosting_on(store: NodeStore, *, joined: bool = False) -> tuple[QueueHosting, Groups]:
    groups = Groups()
    return QueueHosting(ME, store, groups, new_door, HOLD_TICKS, joined=joined), groups


def queue(
    name: str,
    group: str,
    members: list[str],
    initial: list[str] | None = None,
    incarnations: dict[str, str] | None = None,
) -> QueueInfo:
    initial = members if initial is None else initial
    return QueueInfo(name, group, {}, members, 1, initial, initial_incarnations=incarnations or {})


def declared(*infos: QueueInfo) -> Mapping[str, QueueInfo]:
    """The metadata's queues, by name."""
    return {info.name: info for info in infos}


def registered(store: NodeStore, earlier: str = "") -> Mapping[str, NodeInfo]:
    """The metadata's registry once this node registered its database (`earlier`: the one it replaced)."""
    return {ME: NodeInfo(ME, "http://a:1", "a:2", store.incarnation, earlier)}


def voters(store: NodeStore, group: str) -> tuple[str, ...]:
    return store.group(group).initial_state()[1].voters


def test_the_placed_leader_bootstraps_the_group_and_campaigns(store: NodeStore) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile(
        declared(queue("q", "q1", [ME, "b", "c"], incarnations={ME: store.incarnation})),
        registered(store),
        True,
    )
    assert groups.calls == [("open", "q1"), ("campaign", "q1")]
    assert voters(store, "q1") == (ME, "b", "c") and hosting.queues["q"].group == "q1"


def test_the_other_initial_members_hold_their_elections(store: NodeStore) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile(declared(queue("q", "q1", ["b", ME, "c"])), registered(store), True)
    assert groups.calls == [("open", "q1"), ("hold", "q1", HOLD_TICKS)]
    assert voters(store, "q1") == ("b", ME, "c")


def test_a_member_added_later_starts_empty_and_waits_for_the_leader(store: NodeStore) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile(declared(queue("q", "q1", ["b", "c", ME], initial=[])), registered(store), True)
    assert groups.calls == [("open", "q1")] and voters(store, "q1") == ()


def test_an_initial_member_whose_database_is_new_since_the_declaration_waits_to_be_added(
    store: NodeStore,
) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile(
        declared(queue("q", "q1", [ME, "b"], incarnations={ME: "the database before", "b": "ib"})),
        registered(store),
        True,
    )
    assert groups.calls == [("open", "q1")] and voters(store, "q1") == ()


def test_an_initial_member_that_never_held_the_group_bootstraps_it_after_a_membership_change(
    store: NodeStore,
) -> None:
    """Its metadata lagged past the change: the others bootstrapped it as a voter (seed 5100173). A
    leader is elected by then: it neither campaigns nor holds its elections."""
    hosting, groups = hosting_on(store)
    changed = queue("q", "q1", ["b", ME], initial=["b", ME, "c"], incarnations={ME: store.incarnation})
    changed.members_fence = [2, 1]
    hosting.reconcile(declared(changed), registered(store), True)
    assert groups.calls == [("open", "q1")]
    assert voters(store, "q1") == ("b", ME, "c")


def test_past_a_membership_change_an_initial_member_not_recorded_bootstraps_as_its_first_registered_database(
    store: NodeStore,
) -> None:
    """The declaration recorded no incarnation for it (it had not registered yet): the registry vouches for
    the first database it registered (whole-node seed 201869); one that replaced an earlier waits."""
    first, replaced = (
        queue(name, group, ["b", ME], initial=["b", ME, "c"]) for name, group in (("qf", "q1"), ("qr", "q2"))
    )
    first.members_fence = replaced.members_fence = [2, 1]
    hosting, groups = hosting_on(store)
    hosting.reconcile(declared(replaced), registered(store, earlier="wiped"), True)
    assert groups.calls == [("open", "q2")] and voters(store, "q2") == ()
    hosting.reconcile(declared(replaced, first), registered(store), True)
    assert groups.calls[-1] == ("open", "q1") and voters(store, "q1") == ("b", ME, "c")


def test_an_initial_member_that_dropped_the_group_waits_to_be_added_again(store: NodeStore) -> None:
    """Its dropped replica's votes are lost with it: bootstrapping again could vote twice in a term."""
    store.create_group("q1", ConfState(voters=("b", ME, "c")))
    store.commit()
    store.drop_group("q1")
    store.commit()
    hosting, groups = hosting_on(store)
    added_again = queue(
        "q", "q1", ["b", "c", ME], initial=["b", ME, "c"], incarnations={ME: store.incarnation}
    )
    added_again.members_fence = [5, 1]
    hosting.reconcile(declared(added_again), registered(store), True)
    assert groups.calls == [("open", "q1")] and voters(store, "q1") == ()


def test_a_group_the_database_holds_is_reopened_as_it_was(store: NodeStore) -> None:
    hosting_on(store)[0].reconcile(declared(queue("q", "q1", [ME, "b"])), registered(store), True)
    restarted, groups = hosting_on(store)
    restarted.reconcile(declared(queue("q", "q1", [ME, "b"])), registered(store), True)
    assert groups.calls == [("open", "q1")]


def test_deleted_queues_and_queues_declared_again_are_closed_and_dropped(store: NodeStore) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile(
        declared(
            queue("gone", "q1", ["b", ME]), queue("again", "q2", ["b", ME]), queue("kept", "q3", ["b", ME])
        ),
        registered(store),
        True,
    )
    groups.calls.clear()
    hosting.reconcile(
        declared(queue("again", "q4", ["b", ME]), queue("kept", "q3", ["b", ME])), registered(store), True
    )
    assert groups.calls == [  # deleted, and declared again as another group: no tombstone
        ("close", "q1", True, False),
        ("close", "q2", True, False),
        ("open", "q4"),
        ("hold", "q4", HOLD_TICKS),
    ]
    assert {name: door.group for name, door in hosting.queues.items()} == {"again": "q4", "kept": "q3"}


def test_a_queue_no_longer_listing_this_node_keeps_its_replica_until_its_group_removed_this_node(
    store: NodeStore,
) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile(declared(queue("moved", "q1", ["b", ME])), registered(store), True)
    groups.calls.clear()
    hosting.reconcile(declared(queue("moved", "q1", ["b", "c"])), registered(store), True)
    hosting.on_timer(0)
    assert groups.calls == [] and "moved" in hosting.queues  # the metadata may be behind the group
    groups.removed.add("q1")
    hosting.on_timer(0)
    assert groups.calls == [("close", "q1", True, True)] and "moved" not in hosting.queues  # tombstoned


def test_while_the_metadata_replays_only_groups_the_database_holds_are_opened_and_none_is_dropped(
    store: NodeStore,
) -> None:
    hosting_on(store)[0].reconcile(declared(queue("stored", "q1", [ME, "b"])), registered(store), True)
    restarted, groups = hosting_on(store)
    new, stored = queue("new", "q2", [ME, "b"]), queue("stored", "q1", [ME, "b"])
    restarted.reconcile(declared(new, stored), registered(store), False)
    restarted.reconcile(
        declared(new), registered(store), False
    )  # an older state: the queue deleted, declared again later
    groups.removed.add("q1")
    restarted.on_timer(0)
    assert groups.calls == [("open", "q1")] and set(restarted.queues) == {"stored"}
    restarted.reconcile(declared(new), registered(store), True)
    assert groups.calls[1:] == [("close", "q1", True, False), ("open", "q2"), ("campaign", "q2")]


def changed(hosting: QueueHosting, metadata: Mapping[str, QueueInfo]) -> list[SetArguments]:
    """The arguments every led queue changed at runtime, as a sync pass over all of them finds them."""
    return hosting.changed_arguments(metadata, hosting.take_changed(every=True))


def test_a_sync_pass_visits_the_led_queues_changed_since_the_last(store: NodeStore) -> None:
    hosting, _ = hosting_on(store)
    hosting.reconcile(declared(queue("one", "q1", [ME]), queue("two", "q2", [ME])), registered(store), True)
    one, two = hosting.queues["one"], hosting.queues["two"]
    hosting.queue_changed(one)
    assert hosting.take_changed(every=False) == []  # followed: not visited
    hosting.leadership_changed(one, True)
    hosting.leadership_changed(two, True)
    assert hosting.take_changed(every=False) == [one, two]  # taken over
    assert hosting.take_changed(every=False) == []
    hosting.queue_changed(two)  # it applied an entry
    assert hosting.take_changed(every=False) == [two]
    assert hosting.take_changed(every=True) == [one, two]


def test_rule_arguments_changed_at_runtime_are_recorded_by_a_leader_that_serves(store: NodeStore) -> None:
    hosting, _ = hosting_on(store)
    metadata = declared(queue("led", "q1", [ME]), queue("followed", "q2", ["b", ME]))
    hosting.reconcile(metadata, registered(store), True)
    assert changed(hosting, metadata) == []
    for door in hosting.queues.values():
        door.declared_config = Config({"x-max-length": 5})
    led = hosting.queues["led"]
    led.is_leader = True
    hosting.leadership_changed(led, True)
    assert changed(hosting, metadata) == []  # it may not have applied what its predecessor did
    led.serving = True
    assert changed(hosting, metadata) == [SetArguments("led", "q1", {"x-max-length": 5})]
    assert changed(hosting, {}) == []  # deleted meanwhile: nothing to record


def test_rule_a_led_queues_arguments_are_read_again_only_once_its_configuration_changes(
    store: NodeStore,
) -> None:
    """And compared with the metadata's every pass: the metadata changes a queue's record in place."""
    hosting, _ = hosting_on(store)
    info = queue("led", "q1", [ME])
    metadata = declared(info)
    hosting.reconcile(metadata, registered(store), True)
    led = hosting.queues["led"]
    led.is_leader = led.serving = True
    hosting.leadership_changed(led, True)
    for _ in range(3):
        assert changed(hosting, metadata) == []
    assert led.declared_config.read == 1
    info.arguments["x-max-length"] = 5  # a runtime change recorded late, after it was undone
    assert changed(hosting, metadata) == [SetArguments("led", "q1", {})]
    led.declared_config = Config({"x-max-length": 5})  # changed at runtime
    assert changed(hosting, metadata) == []
    assert led.declared_config.read == 1


def test_rule_a_led_queue_whose_timer_finds_nothing_due_is_called_again_only_once_it_wants_it(
    store: NodeStore,
) -> None:
    hosting, _ = hosting_on(store)
    hosting.reconcile(declared(queue("led", "q1", [ME])), registered(store), True)
    door = hosting.queues["led"]
    calls: list[float] = []
    wait: list[float | None] = [None]

    def on_timer() -> float | None:
        calls.append(now)
        return wait[0]

    door.on_timer = on_timer
    now = 0.0
    hosting.on_timer(now)
    assert calls == []  # followed: no timer
    hosting.leadership_changed(door, True)
    hosting.on_timer(now)
    hosting.on_timer(now)
    assert calls == [0]  # nothing could come due: not called again
    wait[0] = 0
    hosting.queue_changed(door)  # an entry applied, a session opened
    for now in (100, 200):
        hosting.on_timer(now)
    assert calls == [0, 100, 200]  # something is due at every tick
    wait[0] = 1000
    for now in (300, 400, 1200, 1300):
        hosting.on_timer(now)
    assert calls == [0, 100, 200, 300, 1300]  # not before the time it named
    hosting.queue_changed(door)
    for now in (1400, 1500):
        hosting.on_timer(now)
    assert calls == [0, 100, 200, 300, 1300, 1400]  # told: at once, and again at its time only
    hosting.leadership_changed(door, False)
    hosting.queue_changed(door)
    for now in (2400, 3000):
        hosting.on_timer(now)
    assert calls == [0, 100, 200, 300, 1300, 1400]  # led elsewhere now


def test_rule_a_dropped_queue_is_not_kept_alive_by_its_later_timer(store: NodeStore) -> None:
    """A led queue whose timer named a time an hour away (a publisher forgotten an hour after its last
    publish), then deleted: nothing of hosting may hold its door, and through it its replica, bodies
    and newest log entries, until that hour has passed (helper's 10M-backlog run: 25 queues of 16 MiB
    bodies declared, filled and deleted kept about 16 MiB each on their leader)."""
    hosting, _ = hosting_on(store)
    hosting.reconcile(declared(queue("gone", "q1", [ME])), registered(store), True)
    door = hosting.queues["gone"]
    door.on_timer = lambda: 3_600_000.0
    hosting.leadership_changed(door, True)
    hosting.on_timer(0)
    hosting.reconcile(declared(), registered(store), True)
    assert "gone" not in hosting.queues
    held = weakref.ref(door)
    del door
    assert held() is None


def test_the_timers_heap_keeps_few_stale_entries(store: NodeStore) -> None:
    """A queue whose timer names an earlier time at each visit leaves a stale entry each time: they are
    dropped once they outnumber the live ones, and its timer still runs at the time it named last."""
    hosting, _ = hosting_on(store)
    hosting.reconcile(declared(queue("led", "q1", [ME])), registered(store), True)
    door = hosting.queues["led"]
    wait = [100_000.0]
    calls: list[float] = []

    def on_timer() -> float:
        calls.append(now)
        wait[0] -= 10
        return wait[0]

    door.on_timer = on_timer
    hosting.leadership_changed(door, True)
    now = 0.0
    for _ in range(1000):
        hosting.queue_changed(door)
        hosting.on_timer(now)
    assert len(hosting._later) <= 2 + STALE_VISITS
    calls.clear()
    now = 100_000.0 - 10 * 1000
    hosting.on_timer(now - 1)
    hosting.on_timer(now)
    assert calls == [now]


def test_an_initial_member_the_declaration_did_not_record_hosts_once_registered_as_its_first_database(
    store: NodeStore,
) -> None:
    """Whole-node seed 4000175: a queue declared before its members registered records no incarnation,
    and a member wiped since must not bootstrap it afresh as a voter that holds nothing. It opens the
    group only once registered, so the first database registered under its name is the one that may
    have voted in it; registered as that database, it bootstraps (waiting instead could outlast the
    initial members, and leave a voter that refuses every vote: whole-node seed 5100173)."""
    hosting, groups = hosting_on(store)
    declaration = declared(queue("q", "q1", ["b", ME, "c"]))
    hosting.reconcile(declaration, {}, True)
    assert groups.calls == [] and "q1" not in store.group_ids() and "q" not in hosting.queues
    hosting.reconcile(declaration, registered(store), True)
    assert groups.calls == [("open", "q1"), ("hold", "q1", HOLD_TICKS)]
    assert voters(store, "q1") == ("b", ME, "c")


def test_a_wiped_initial_member_the_declaration_did_not_record_waits_to_be_added(store: NodeStore) -> None:
    hosting, groups = hosting_on(store)
    hosting.reconcile(declared(queue("q", "q1", [ME, "b"])), registered(store, earlier="wiped"), True)
    assert groups.calls == [("open", "q1")] and voters(store, "q1") == ()
    old_database = {ME: NodeInfo(ME, "http://a:1", "a:2", "the database before")}  # not registered again yet
    hosting.reconcile(declared(queue("r", "q2", [ME, "b"])), old_database, True)
    assert groups.calls[-1] == ("open", "q2") and voters(store, "q2") == ()


def test_a_registration_that_names_no_database_yet_defers_hosting(store: NodeStore) -> None:
    """Review: a join registers the node before its database is named; the registry cannot vouch for a
    database it does not name, so the node waits for its own registration, which names it."""
    hosting, groups = hosting_on(store)
    declaration = declared(queue("q", "q1", ["b", ME, "c"]))
    unnamed = {ME: NodeInfo(ME, "http://a:1", "a:2", "")}
    hosting.reconcile(declaration, unnamed, True)
    assert groups.calls == [] and "q1" not in store.group_ids()
    hosting.reconcile(declaration, registered(store), True)
    assert voters(store, "q1") == ("b", ME, "c")


def test_a_joined_database_the_declaration_did_not_record_waits_to_be_added(store: NodeStore) -> None:
    """Review: a node forgotten (its record erased) and joined again under its name registers afresh,
    so the registry would vouch for a database that never saw the group as the one that voted in it;
    before and after a membership change, such a member waits to be added."""
    unchanged = queue("q", "q1", ["b", ME, "c"])
    changed = queue("r", "q2", ["b", ME], initial=["b", ME, "c"])
    changed.members_fence = [2, 1]
    hosting, groups = hosting_on(store, joined=True)
    hosting.reconcile(declared(unchanged, changed), registered(store), True)
    assert groups.calls == [("open", "q1"), ("open", "q2")]
    assert voters(store, "q1") == () and voters(store, "q2") == ()
