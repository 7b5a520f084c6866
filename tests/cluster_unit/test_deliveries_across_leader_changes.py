"""What a consumer is answered when its queue's leader changes under its request, on three real RaftHosts
(real transports and RocksDB stores) each with a queue replica and its door (`QueueDoor`).

The leader's own write is held back with a gate while its followers persist its entry; they elect a
successor, which commits the entry; then the gate opens and the old leader applies its own entry as a
follower. So the order of events does not depend on timing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from gated_cluster import GROUP, Node, gated_cluster
from queue_doors import door_of, lead, queue_replica, texts
from support.eventually import eventually

from cluster.queues.queue_door import QueueDoor
from cluster.queues.queue_replica import QueueReplica

ELECTION_TICKS = 10  # 0.5 s: a successor is elected soon after the leader stops sending


async def successor_commits(nodes: dict[str, Node], doors: dict[str, QueueDoor]) -> str:
    """With a's write held back, its next entry persisted by b and c: one of them leads, has applied
    that entry, and a follows it. Returns the successor's name."""
    raft = nodes["a"].host.groups[GROUP].raft
    index = raft.status().last_index + 1

    def followers_persisted() -> bool:
        progress = raft.status().progress
        return raft.status().last_index >= index and all(progress[f].match >= index for f in ("b", "c"))

    await eventually(followers_persisted, "b and c to persist a's entry")
    await eventually(lambda: any(doors[n].is_leader for n in ("b", "c")), "a successor to lead")
    successor = next(n for n in ("b", "c") if doors[n].is_leader)
    await eventually(lambda: nodes[successor].host.groups[GROUP].applied >= index, "the entry to commit")
    await eventually(lambda: raft.leader == successor, "a to follow the successor")
    return successor


async def test_rule_an_auto_ack_get_answers_what_it_took_when_a_successor_commits_it(tmp_path: Path) -> None:
    """An auto-ack get proposed on a, committed by its successor and applied on a as a follower, removed
    its messages: a answers them (it proposed the get), never an empty list."""
    async with gated_cluster(tmp_path, queue_replica, election_ticks=ELECTION_TICKS) as nodes:
        doors = {name: door_of(node) for name, node in nodes.items()}
        await lead(nodes, doors, "a")
        await doors["a"].publish(texts("x", "y"), None, None)
        nodes["a"].store.gate.clear()
        taking = asyncio.ensure_future(doors["a"].get(2, auto_ack=True, since_ms=None))
        successor = await successor_commits(nodes, doors)
        nodes["a"].store.gate.set()
        rows = await asyncio.wait_for(taking, 20)
        assert doors[successor].stats().messages == 0  # the get took both
        assert [row.body for row in rows] == [b"x", b"y"]


def poll_once_leading(node: Node, door: QueueDoor, tag: str, polls: dict[str, asyncio.Future]) -> None:
    """Have consumer `tag` poll `door` the moment its node starts leading (a client that turned to the
    new leader at once), before it applied what its predecessor committed."""
    replica: QueueReplica = node.app
    assert replica.listener is door
    told = door.role_changed

    def role_changed(is_leader: bool) -> None:
        told(is_leader)
        if is_leader and node.name not in polls:
            polls[node.name] = asyncio.ensure_future(door.poll(tag, 10, 5.0))

    door.role_changed = role_changed  # what the replica calls on its listener, the door


async def test_rule_an_auto_ack_consumer_is_never_handed_again_what_it_was_answered(tmp_path: Path) -> None:
    """a's poll settles x and y; its successor, leading before it applied that Settle, must not hand them
    to the consumer again (a duplicate): it serves only once it applied an entry of its own term, and a
    poll answers only what its own Settle settled."""
    async with gated_cluster(tmp_path, queue_replica, election_ticks=ELECTION_TICKS) as nodes:
        doors = {name: door_of(node) for name, node in nodes.items()}
        await lead(nodes, doors, "a")
        tag = await doors["a"].register_consumer(2, 0, None, None, auto_ack=True)
        await doors["a"].publish(texts("x", "y", "z"), None, None)
        await eventually(
            lambda: all(door.stats().messages_unacknowledged == 2 for door in doors.values()),
            "every replica to apply the hand-out of x and y",
        )
        polls: dict[str, asyncio.Future] = {}
        for name in ("b", "c"):
            poll_once_leading(nodes[name], doors[name], tag, polls)
        nodes["a"].store.gate.clear()
        first = asyncio.ensure_future(doors["a"].poll(tag, 10, 5.0))
        successor = await successor_commits(nodes, doors)
        nodes["a"].store.gate.set()
        answered = [bytes(row.body) for row in await asyncio.wait_for(first, 20)]
        answered += [bytes(row.body) for row in await asyncio.wait_for(polls[successor], 20)]
        assert sorted(answered) == [b"x", b"y", b"z"]
