"""Idle groups cost nothing (issue 40, slice 5): a host quiesces a group with nothing in flight, sends only
one beat per peer while every group is quiet, and wakes the groups it shares with a peer that falls
silent, so failure detection still works. Real RaftHosts and RocksDB, stepped by the test."""

from __future__ import annotations

from stepped_cluster import GROUP, NAMES, SteppedCluster, publish_op

from cluster.replication.transport import KIND_RAFT
from raft_log.types import Repair

OTHERS = ("b", "c")


def _tick_all(cluster: SteppedCluster, among: tuple[str, ...] = NAMES) -> None:
    for name in among:
        cluster.hosts[name].tick()


def test_an_idle_group_goes_quiet_on_every_member_and_sends_only_beats(cluster: SteppedCluster) -> None:
    for _ in range(50):  # five election timeouts
        _tick_all(cluster)
        assert not any(frame.kind == KIND_RAFT for frame in cluster.network.in_flight)
        assert not any(cluster.hosts[name].has_work() for name in NAMES)
        cluster.settle()
    assert cluster.group("a").raft.is_leader
    assert all(cluster.group(name).raft.quiet for name in NAMES)


async def test_a_proposal_wakes_the_group_and_commits(cluster: SteppedCluster) -> None:
    future = cluster.hosts["a"].submit(GROUP, publish_op(b"wake up"))
    cluster.settle()
    assert future.done() and future.exception() is None
    assert all(cluster.group(name).applied == cluster.group("a").applied for name in NAMES)
    cluster.until(lambda: all(cluster.group(name).raft.quiet for name in NAMES))


def test_rule_a_silent_leaders_followers_wake_and_elect_another(cluster: SteppedCluster) -> None:
    """The leader's node stops answering: b and c hear no beat from it, wake and elect one of them."""
    cluster.until(lambda: any(cluster.group(name).raft.is_leader for name in OTHERS), among=OTHERS)
    assert not any(cluster.group(name).raft.quiet for name in OTHERS)


def test_a_quiet_leader_cut_off_wakes_and_steps_down(cluster: SteppedCluster) -> None:
    """Cut off, the quiet leader hears no beat: it wakes, finds no quorum and steps down."""
    cluster.until(lambda: not cluster.group("a").raft.is_leader, among=("a",))


def test_a_lost_link_to_the_leader_wakes_its_followers_group(cluster: SteppedCluster) -> None:
    cluster.hosts["b"].wake_shared("a")
    assert not cluster.group("b").raft.quiet
    assert cluster.group("c").raft.quiet


def test_losing_a_follower_wakes_neither_the_leader_holding_a_majority_nor_the_other_follower(
    cluster: SteppedCluster,
) -> None:
    """Waking every shared group on each lost peer would wake thousands of groups whose leader is heard."""
    cluster.hosts["a"].wake_shared("c")
    cluster.hosts["b"].wake_shared("c")
    assert cluster.group("a").raft.quiet and cluster.group("b").raft.quiet


def test_rule_followers_woken_by_a_pause_of_their_leader_go_quiet_again_when_it_is_heard(
    cluster: SteppedCluster,
) -> None:
    """The leader's process pauses long enough for b and c to deem it silent, then runs on before they
    elect: they hear its beats again and go quiet, and it keeps leading in its term (before, they stayed
    awake, heard nothing from their quiet leader and elected another: on a loaded node with thousands of
    groups, every pause churned the leadership of all the groups it led)."""
    term = cluster.group("a").raft.term
    cluster.until(lambda: not any(cluster.group(name).raft.quiet for name in OTHERS), among=OTHERS)
    cluster.until(lambda: all(cluster.group(name).raft.quiet for name in OTHERS))
    for _ in range(50):  # five election timeouts
        _tick_all(cluster)
        cluster.settle()
    assert cluster.group("a").raft.is_leader and cluster.group("a").raft.term == term
    assert all(cluster.group(name).raft.quiet for name in NAMES)


def test_rule_followers_of_a_restarted_leader_do_not_rest(cluster: SteppedCluster) -> None:
    """The leader's process dies (its links close), comes back before its followers elect, and is heard:
    a restarted process leads nothing, so they must not go quiet following it. Here its replica may not
    campaign (it repairs its log, as after a power loss): resting, b and c would wait for it forever."""
    for name in OTHERS:
        cluster.hosts[name].link_lost("a")
        cluster.group(name).raft._randomized_election_timeout = 19  # elect only after the silence
    cluster.restart("a")
    cluster.group("a").raft._repair = Repair("entry missing", 5, 5)
    for _ in range(16):  # long enough for b and c to deem a silent, not to elect
        cluster.settle(OTHERS)
        _tick_all(cluster, OTHERS)
    cluster.until(lambda: any(cluster.group(name).raft.is_leader for name in OTHERS))
