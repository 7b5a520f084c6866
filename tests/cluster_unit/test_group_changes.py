"""GroupChanges over real RaftHosts, transports and RocksDB stores: when a membership change counts.

The gates of `gated_cluster` hold a node's writes back, so the core's in-memory commit index can be
made to move before the leader's own write of a change is durable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from gated_cluster import GROUP, NAMES, Node
from support.eventually import eventually

from cluster.membership import group_changes
from cluster.membership.group_changes import GroupChanges, MembershipRefused
from raft_log.types import ConfState

OBSERVE_S = 1.0  # far longer than a poll of the commit index takes to report a change


async def test_rule_a_membership_change_is_confirmed_only_once_applied_on_the_leader(
    nodes: dict[str, Node],
) -> None:
    """Not when the core's commit index passes it, which may be before the leader's own write of it is
    durable (issue 17, finding 2)."""
    leader = nodes["a"]
    leader.host.campaign(GROUP)
    group = leader.host.groups[GROUP]
    raft = group.raft
    await eventually(
        lambda: raft.is_leader and all(n.host.groups[GROUP].applied >= 1 for n in nodes.values()),
        "a to lead and every node to apply its no-op",
    )
    changes = GroupChanges(leader.host, lambda _: True)
    assert changes.settled_conf(GROUP) == ConfState(voters=NAMES)
    index = raft.status().last_index + 1

    leader.store.gate.clear()  # b and c persist the change; the leader's own write is held back
    removal = asyncio.create_task(changes.remove(GROUP, "c"))
    await eventually(lambda: raft.status().commit >= index, "the core to count the removal as committed")
    assert group.applied < index

    done, _ = await asyncio.wait({removal}, timeout=OBSERVE_S)
    assert not done, "the removal was reported before the leader had written and applied it"
    assert changes.settled_conf(GROUP) is None  # nor may the membership without c count as settled

    leader.store.gate.set()
    await asyncio.wait_for(removal, 20)
    assert group.applied >= index and raft.entry_term(index) == raft.term
    assert changes.settled_conf(GROUP) == ConfState(voters=("a", "b"))


async def _leading_linked(nodes: dict[str, Node]) -> tuple[GroupChanges, Callable[[], dict[str, bool]]]:
    """a leading the group, linked with every peer and settled: its changes, which count a peer up while
    its link is, and its links."""
    leader = nodes["a"]
    leader.host.campaign(GROUP)
    await eventually(lambda: leader.host.groups[GROUP].raft.is_leader, "a to lead")
    linked = leader.transport.peers
    changes = GroupChanges(leader.host, lambda peer: peer == "a" or linked().get(peer, False))
    await eventually(lambda: all(linked().values()) and changes.settled_conf(GROUP), "a linked and settled")
    return changes, linked


async def test_rule_a_new_member_that_goes_unreachable_ends_its_catch_up_early(
    nodes: dict[str, Node], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An add waits for the new member to catch up for up to a minute; a member that stops (or is
    forgotten) meanwhile ends the wait once it has been unreachable for a while, answered `node_down`,
    so the caller is not kept waiting for the full minute (whole-node seed 201342)."""
    monkeypatch.setattr(group_changes, "CATCH_UP_DOWN_S", 0.5)
    changes, _ = await _leading_linked(nodes)
    await changes.remove(GROUP, "c")
    await nodes["c"].transport.stop()
    with pytest.raises(MembershipRefused) as refused:
        await asyncio.wait_for(changes.add(GROUP, "c"), 20)
    assert refused.value.code == "node_down"


async def test_rule_a_learner_is_promoted_only_while_it_is_up_seed_5103326(nodes: dict[str, Node]) -> None:
    """A queue's leader, its only voter, promoted a learner that had caught up and then stopped for
    good: the group of two voters needed the dead one for every commit and never served again. A
    learner that is unreachable is neither promotable nor promoted."""
    changes, linked = await _leading_linked(nodes)
    await changes.remove(GROUP, "c")
    await changes.remove(GROUP, "b")
    await changes.change(GROUP, changes.new_learner("c"))
    seen: dict[str, int] = {}
    changes.promotable(GROUP, seen)
    await eventually(
        lambda: changes.leader_status(GROUP).progress["c"].match >= seen["c"], "c to catch up as a learner"
    )
    await nodes["c"].transport.stop()
    await eventually(lambda: not linked().get("c"), "a to see c gone")
    assert changes.promotable(GROUP, seen) is None
    with pytest.raises(MembershipRefused) as refused:
        await changes.promote(GROUP, "c")
    assert refused.value.code == "node_down"
    assert changes.leader_status(GROUP).conf.voters == ("a",)
