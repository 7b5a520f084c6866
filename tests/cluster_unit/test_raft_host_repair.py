"""A RaftHost whose store was damaged while it was down rejoins its group repairing (finding 6 of #17).

Real transports and RocksDB: node c stops, one of its acknowledged entries is damaged on disk, and it
restarts repairing; the leader repairs it, counts it again, and the repair ends durably.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from gated_cluster import GROUP, GatedStore, Node, a_command, restarted_host
from rocksdict import Options, Rdict
from support.eventually import eventually

from cluster.metadata.metadata_app import MetadataApp
from cluster.replication.raft_host import RaftHost
from cluster.replication.transport import Transport
from raft_log.storage.keys import GroupKeys


def damage_entry(path: Path, index: int) -> None:
    """Flip a byte of a stored entry behind the store's back (the store must be closed)."""
    db = Rdict(str(path), Options(raw_mode=True))
    key = GroupKeys(GROUP).entry(index)
    value = db[key]
    db[key] = value[:-1] + bytes([value[-1] ^ 0x5A])
    db.close()


async def restart(nodes: dict[str, Node], name: str, tmp_path: Path, damaged: int) -> Node:
    """Stop node `name`, damage its entry at `damaged`, and start it again on the same port."""
    old = nodes[name]
    await old.host.stop()
    await old.transport.stop()
    old.store.close()
    damage_entry(tmp_path / name, damaged)
    store = GatedStore.open(tmp_path / name)
    holder: list[RaftHost] = []
    transport = Transport(
        name,
        old.transport.listen,
        "secret",
        lambda *f, h=holder: h[0].on_frame(*f),
        on_link_lost=lambda peer, h=holder: h[0].link_lost(peer),  # as a Node wires it
    )
    host = restarted_host(name, store, transport, tick_ms=50, election_ticks=20)
    holder.append(host)
    node = nodes[name] = Node(name, store, transport, host, MetadataApp(lambda: None))
    for peer in nodes.values():
        if peer is not node:
            transport.set_peer(peer.name, peer.transport.listen)
    await transport.start()
    host.open_group(GROUP, node.app)
    host.start()
    return node


async def test_rule_a_damaged_replica_rejoins_repairing_until_the_leader_repairs_it_durably(
    nodes: dict[str, Node], tmp_path: Path
) -> None:
    leader = nodes["a"]
    leader.host.campaign(GROUP)
    raft = leader.host.groups[GROUP].raft
    await eventually(lambda: raft.is_leader and raft.status().commit >= 1, "a to lead and commit its no-op")
    for _ in range(3):
        await asyncio.wait_for(leader.host.submit(GROUP, a_command()), 20)
    last = raft.status().last_index
    await eventually(lambda: nodes["c"].host.groups[GROUP].raft.status().commit == last, "c to commit all")

    c = await restart(nodes, "c", tmp_path, damaged=last - 1)
    group = c.host.groups[GROUP]
    assert group.raft.repair is not None and group.raft.repair.through == last
    assert c.store.group(GROUP).last_index() == last - 2
    await eventually(lambda: group.raft.repair is None, "the leader to repair c")
    assert c.store.group(GROUP).entries(1, last + 1) == leader.store.group(GROUP).entries(1, last + 1)
    await eventually(lambda: c.store.group(GROUP).repair() is None, "c to end its repair in storage")
    await eventually(lambda: not raft.status().progress["c"].repairing, "the leader to count c again")
