"""A node's status: when it is ready, which of its groups are not yet rebound to its incarnation after
damage, which peers are up and which nodes belong to the cluster."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from cluster.metadata.metadata_app import MetadataApp
from cluster.metadata.metadata_view import MetadataView
from cluster.node_status import NodeStatus
from cluster.store.store_check import StoreCheck
from cluster.store.store_damage import Damage
from metadata_state.commands import BootstrapUsers, Declare, RegisterNode
from raft_log.types import ConfState

ME, META = "a", "meta"
MINE = "incarnation-a"
DAMAGE = Damage("checksum mismatch", 5, "/data/damaged-5")


def raft_group(
    voters: tuple[str, ...] = (ME,),
    learners: tuple[str, ...] = (),
    incarnation: str = MINE,
    is_leader: bool = False,
    repair: Any = None,
    halted: Any = None,
) -> Any:
    conf = ConfState(voters=voters, learners=learners, incarnations=((ME, incarnation),))
    raft = SimpleNamespace(conf=conf, is_leader=is_leader, repair=repair, quiet=False)
    return SimpleNamespace(raft=raft, halted=halted, leading=is_leader and halted is None)


class Raft:
    """The groups this node hosts and who leads each (None: no leader known)."""

    def __init__(self, groups: dict[str, Any], leaders: dict[str, str | None]) -> None:
        self.groups = groups
        self.leaders = leaders
        self.leader_changes = 3

    def leader_of(self, gid: str) -> str | None:
        return self.leaders.get(gid)


class Peers:
    def __init__(self, connected: dict[str, bool]) -> None:
        self.connected = connected

    def peers(self) -> dict[str, bool]:
        return self.connected


def status_of(
    raft: Raft, app: MetadataApp, damage: Damage | None = None, peers: dict[str, bool] | None = None
) -> NodeStatus:
    check = StoreCheck(lambda after, max_bytes: (None, 0))
    return NodeStatus(ME, META, raft, Peers(peers or {}), MetadataView(app), MINE, damage, check)


def metadata(*commands: Any) -> MetadataApp:
    app = MetadataApp(lambda: None)
    for command in commands:
        app.state.apply(command)
    return app


def test_a_node_is_ready_once_a_metadata_leader_is_known_it_is_registered_and_users_are_initialised() -> None:
    raft = Raft({META: raft_group()}, {META: None})
    app = metadata()
    assert status_of(raft, app).readiness() == "no_quorum"
    raft.leaders[META] = "b"
    assert status_of(raft, app).readiness() == "initialising"
    app.state.apply(RegisterNode(ME, "http://a", "a:1", MINE))
    assert status_of(raft, app).readiness() == "initialising"  # the user table is not initialised yet
    app.state.apply(BootstrapUsers("", ""))
    assert status_of(raft, app).readiness() == "ok"
    raft.leaders[META] = None
    assert status_of(raft, app).readiness() == "no_quorum"


def test_groups_not_rebound_are_this_nodes_groups_without_it_as_a_repaired_voter_of_its_incarnation() -> None:
    app = metadata(
        RegisterNode(ME, "http://a", "a:1", MINE),
        *(
            Declare(name, {}, (ME, "b"), 1)
            for name in ("rebound", "other", "learner", "repairing", "unopened")
        ),
        Declare("elsewhere", {}, ("b", "c"), 1),
    )
    group = {name: info.group for name, info in app.state.queues.items()}
    raft = Raft(
        {
            META: raft_group(),
            group["rebound"]: raft_group(),
            group["other"]: raft_group(incarnation="incarnation-before"),
            group["learner"]: raft_group(voters=("b",), learners=(ME,)),
            group["repairing"]: raft_group(repair=object()),
        },
        {META: ME},
    )
    expected = [group[name] for name in ("other", "learner", "repairing", "unopened")]
    assert status_of(raft, app).groups_not_rebound() == expected
    assert status_of(raft, app).damage_status() is None
    damaged = status_of(raft, app, DAMAGE)
    assert damaged.damage_status() == {
        "reason": DAMAGE.reason,
        "found_ms": DAMAGE.found_ms,
        "moved_to": DAMAGE.moved_to,
        "repairing": True,
    }
    assert damaged.rebinding(group["rebound"]) is None
    assert damaged.rebinding(group["other"]) == {
        "reason": "new incarnation: database damaged (checksum mismatch)",
        "index": None,
        "through": None,
    }
    assert status_of(raft, app).rebinding(group["other"]) is None  # no damage found: nothing to tell


def test_damage_is_no_longer_repairing_once_every_group_is_rebound() -> None:
    app = metadata(RegisterNode(ME, "http://a", "a:1", MINE), Declare("q", {}, (ME,), 1))
    raft = Raft({META: raft_group(), app.state.queues["q"].group: raft_group()}, {META: ME})
    assert status_of(raft, app, DAMAGE).damage_status() == {
        "reason": DAMAGE.reason,
        "found_ms": DAMAGE.found_ms,
        "moved_to": DAMAGE.moved_to,
        "repairing": False,
    }


def test_this_node_is_always_up_and_a_peer_while_its_connection_is() -> None:
    status = status_of(Raft({}, {}), metadata(), peers={"b": True, "c": False})
    assert [status.is_up(name) for name in (ME, "b", "c", "d")] == [True, True, False, False]


def test_cluster_nodes_are_registered_members_of_the_metadata_group_learners_included() -> None:
    app = metadata(*(RegisterNode(name, f"http://{name}", f"{name}:1") for name in (ME, "b", "gone")))
    raft = Raft({META: raft_group(voters=(ME, "c"), learners=("b",))}, {META: ME})
    status = status_of(raft, app)
    assert status.cluster_members() == [ME, "c"] and status.metadata_members() == (ME, "c", "b")
    assert [status.is_cluster_node(name) for name in (ME, "b", "c", "gone")] == [True, True, False, False]
    assert (
        status.node_http("b") == "http://b"
        and status.node_http("c") is None
        and status.node_http(None) is None
    )


def test_the_groups_without_a_leader_leave_out_the_metadata_group() -> None:
    raft = Raft(
        {
            META: raft_group(),
            "q1": raft_group(is_leader=True),
            "q2": raft_group(repair=object()),
            "q3": raft_group(),
        },
        {"q1": ME, "q3": "b"},
    )
    groups = status_of(raft, metadata()).groups()
    assert (groups.hosted, groups.led, groups.without_leader, groups.repairing) == (4, 1, ["q2"], ["q2"])
    assert status_of(raft, metadata()).leader_changes == 3
