"""A group bootstrapped with unknown incarnations (the metadata group, from its seeds) gets them bound by
its leader once every member proved one (finding 7 of issue 17); a wiped member then counts for nothing.

Real transports and RocksDB: a, b and c host a group whose bootstrap configuration records no
incarnation. Once all three connected, a (the leader) binds each member's incarnation, one conf change
at a time. c's database is then wiped and c restarts from the same bootstrap; with b stopped, an entry
a proposes must not commit with the wiped c's acknowledgements, and before c is replaced no removal may
leave the wiped c in the live majority.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from gated_cluster import GROUP, Running, a_command, local_addresses, start_led_by
from support.eventually import eventually

from cluster.membership.group_changes import GroupChanges, MembershipRefused
from raft_log.types import ConfState

NAMES = ("a", "b", "c")


async def bind_all(changes: GroupChanges, nodes: dict[str, Running]) -> ConfState:
    """Let the leader bind unknown incarnations until none is left; returns the bound configuration."""
    leader = nodes["a"]
    wanted = tuple(sorted((n, node.store.incarnation) for n, node in nodes.items()))

    async def bound() -> ConfState:
        conf = leader.raft.status().conf
        if conf.incarnations != wanted:
            await changes.bind_unknown_incarnation(GROUP)  # NotLeader until the group settles
        assert conf.incarnations == wanted, conf
        return conf

    return await eventually(bound, "the incarnations bound", timeout=10, interval=0.05)


async def test_rule_a_leader_binds_unknown_incarnations_and_a_wiped_member_then_counts_for_nothing(
    tmp_path: Path,
) -> None:
    addresses = local_addresses(NAMES)
    seeds = ConfState(voters=NAMES)  # as the metadata group bootstraps: no incarnation known
    nodes = {name: Running(name, tmp_path / name, addresses[name], seeds) for name in NAMES}
    try:
        a = await start_led_by(nodes, addresses, "a")
        changes = GroupChanges(a.host, lambda _: True)
        await eventually(lambda: all(a.transport.peer_incarnation(n) for n in "bc"), "b and c to connect")
        bound = await bind_all(changes, nodes)
        assert await changes.bind_unknown_incarnation(GROUP) is None
        await eventually(lambda: nodes["b"].raft.status().conf == bound, "b to apply the bindings")
        old_c = bound.incarnation_of("c")

        await nodes.pop("c").stop()
        shutil.rmtree(tmp_path / "c")  # c's disk is wiped: it restarts from the seeds as a new incarnation
        nodes["c"] = Running("c", tmp_path / "c", addresses["c"], seeds)
        assert nodes["c"].store.incarnation != old_c
        await nodes["c"].start(addresses)
        await nodes["b"].stop()
        await eventually(
            lambda: a.transport.peer_incarnation("c") == nodes["c"].store.incarnation, "c's hello"
        )
        dropped, entry = a.host.dropped_messages, a.raft.status().last_index + 1
        submitted = asyncio.ensure_future(a.host.submit(GROUP, a_command()))
        await eventually(
            lambda: a.host.dropped_messages >= dropped + 10 or a.raft.status().commit >= entry,
            "c's answers to reach a",
        )
        assert a.raft.status().commit < entry, "an entry committed with the wiped c's acknowledgements"
        assert not submitted.done() or submitted.exception() is not None  # a may step down: no quorum
        assert a.raft.status().conf.incarnation_of("c") == old_c
        submitted.cancel()
    finally:
        for node in nodes.values():
            await node.stop()


async def test_rule_no_incarnation_is_bound_while_a_member_proved_none(tmp_path: Path) -> None:
    """A member that proves no incarnation may run a version that cannot decode BIND_INCARNATION."""
    addresses = local_addresses(NAMES)
    seeds = ConfState(voters=NAMES)
    nodes = {name: Running(name, tmp_path / name, addresses[name], seeds) for name in NAMES}
    nodes["c"].transport.incarnation = ""  # its hello proves none, as an older version's
    try:
        a = await start_led_by(nodes, addresses, "a")
        changes = GroupChanges(a.host, lambda _: True)
        await eventually(lambda: a.transport.peer_incarnation("b") != "", "b to connect")
        await eventually(lambda: changes.settled_conf(GROUP) is not None, "a to settle")
        await eventually(lambda: nodes["c"].raft.status().commit >= 1, "c to follow")
        assert await changes.bind_unknown_incarnation(GROUP) is None
        assert a.raft.status().conf == seeds
    finally:
        for node in nodes.values():
            await node.stop()


async def test_a_removal_is_refused_when_the_live_majority_left_would_count_a_wiped_member(
    tmp_path: Path,
) -> None:
    """Removing b while the wiped c is not yet replaced would leave a and the old c, whose new incarnation
    counts for nothing: a majority of that group would be gone for good, and no leader elected again."""
    addresses = local_addresses(NAMES)
    seeds = ConfState(voters=NAMES)
    nodes = {name: Running(name, tmp_path / name, addresses[name], seeds) for name in NAMES}
    try:
        a = await start_led_by(nodes, addresses, "a")
        changes = GroupChanges(a.host, lambda _: True)  # every peer connected, the wiped c too
        await eventually(lambda: all(a.transport.peer_incarnation(n) for n in "bc"), "b and c to connect")
        bound = await bind_all(changes, nodes)

        await nodes.pop("c").stop()
        shutil.rmtree(tmp_path / "c")
        nodes["c"] = Running("c", tmp_path / "c", addresses["c"], seeds)
        await nodes["c"].start(addresses)
        await eventually(
            lambda: a.transport.peer_incarnation("c") == nodes["c"].store.incarnation, "c's hello"
        )
        assert changes.replaced_member(a.raft.status().conf) == ("c", bound.incarnation_of("c"))

        with pytest.raises(MembershipRefused) as refused:
            await changes.remove(GROUP, "b")
        assert refused.value.code == "no_quorum"
        assert a.raft.status().conf == bound
        await changes.replace(GROUP, "c")  # removing the old c leaves a and b: a live majority
        assert a.raft.status().conf.learners == ("c",)
    finally:
        for node in nodes.values():
            await node.stop()
