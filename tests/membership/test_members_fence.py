"""A deposed queue leader cannot make a current voter drop its replica (finding 5 of issue 17).

Four real nodes (RocksDB, TCP, Raft) run in this process so the tests can hold back the message a
queue leader's heal sends to the metadata, as a slow network or a paused process would, and let it
arrive only after that leader was deposed and its successor changed the members; or interrupt a
leader's add between two of its steps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from in_process_cluster import InProcessCluster, metadata_applied, metadata_leader, raft_group, settled_leader
from support.eventually import eventually

from cluster.metadata.metadata_door import MetadataDoor
from cluster.node import Node
from metadata_state.commands import Command, SetMembers
from metadata_state.replies import Stale
from raft_log.confchange import ConfChange, ConfChangeKind

NAMES = ("n1", "n2", "n3", "n4")
QUEUE = "fenced"
LATER_DECISION = 10**9  # beyond any number a leader's counter reaches in a test


@pytest.fixture
async def nodes(tmp_path: Path) -> AsyncIterator[dict[str, Node]]:
    cluster = InProcessCluster(tmp_path, NAMES)
    try:
        yield await cluster.start_all()
    finally:
        await cluster.stop_all()


async def declared_queue(nodes: dict[str, Node]) -> tuple[str, Node, Node, Node, Node]:
    """Declare QUEUE on three of the nodes; its group, its settled leader, the two other members and
    the node without a replica."""
    await metadata_leader(nodes).directory.declare(
        QUEUE, {"x-quorum-initial-group-size": 3}, client_node="n1"
    )
    info = nodes["n1"].directory.info(QUEUE)
    await eventually(lambda: settled_leader(nodes, info.group) is not None, f"a leader of {QUEUE}")
    a = settled_leader(nodes, info.group)
    assert a is not None
    b, c = (nodes[m] for m in info.members if m != a.name)
    x = next(n for n in nodes.values() if n.name not in info.members)
    return info.group, a, b, c, x


async def test_rule_a_deposed_queue_leaders_heal_cannot_make_a_voter_drop_its_replica(
    nodes: dict[str, Node],
) -> None:
    gid, a, b, c, x = await declared_queue(nodes)
    kept = [m for m in a.directory.info(QUEUE).members if m != c.name]  # in the metadata's order

    # A's heal sends set_members from now on; the network holds those messages back.
    held: list[SetMembers] = []
    door = a.metadata_door

    def hold_set_members(command: Command) -> None:
        if isinstance(command, SetMembers):
            held.append(command)
        else:
            MetadataDoor.relay(door, command)

    door.relay = hold_set_members  # type: ignore[method-assign]
    # A delete interrupted after its Raft change and before its metadata update: heal finishes it.
    await a.membership.changes.remove(gid, c.name)
    await eventually(lambda: bool(held), f"{a.name}'s heal to send set_members")
    stale = held[-1]
    assert list(stale.members) == kept

    # A is deposed; its successor B finishes the removal itself, then adds X, which becomes a voter.
    await a.membership.queues.transfer_leader(QUEUE, b.name)
    del door.relay  # A's door relays again
    await eventually(lambda: settled_leader(nodes, gid) is b, f"{b.name} to lead {QUEUE}")
    assert await b.membership.queues.add(QUEUE, x.name) == [*kept, x.name]

    # The held message reaches the metadata leader at last.
    meta = metadata_leader(nodes)
    reply = await meta.metadata_door.set_members(stale.queue, stale.group, list(stale.members), stale.fence)
    await metadata_applied(meta, x)
    assert QUEUE in x.queues and x.name in raft_group(x, gid).raft.status().conf.voters
    assert x.directory.info(QUEUE).members == [*kept, x.name]
    assert isinstance(reply, Stale), reply


async def test_rule_a_successor_promotes_a_learner_only_under_a_fence_of_its_own_term(
    nodes: dict[str, Node],
) -> None:
    gid, a, b, _, x = await declared_queue(nodes)
    listed = a.directory.info(QUEUE).members
    term_a = raft_group(a, gid).raft.term
    # A's add of X is interrupted once X is a learner: A loses the leadership to B.
    async with a.membership.changes.exclusive(gid, "the test"):  # keeps A's own heal out
        await a.membership.queues.publish_members(QUEUE, [*listed, x.name], term_a)
        await a.membership.changes.change(gid, ConfChange(ConfChangeKind.ADD_LEARNER, x.name))
        await a.membership.changes.transfer(gid, b.name, 5.0)

    # B's heal finishes the add: X becomes a voter only once the metadata holds B's fence.
    await eventually(lambda: x.name in raft_group(b, gid).raft.status().conf.voters, f"{x.name} a voter")
    term_b = raft_group(b, gid).raft.term
    assert b.directory.info(QUEUE).members == [*listed, x.name]
    assert b.directory.info(QUEUE).members_fence[0] == term_b > term_a

    # Whatever A decided later in its term, from a configuration without X, is refused.
    meta = metadata_leader(nodes)
    reply = await meta.metadata_door.set_members(QUEUE, gid, listed, (term_a, LATER_DECISION))
    await metadata_applied(meta, x)
    assert QUEUE in x.queues and x.directory.info(QUEUE).members == [*listed, x.name]
    assert isinstance(reply, Stale), reply
