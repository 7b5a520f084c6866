"""A wiped node cannot help elect a laggard (finding 7 of issue 17): the host drops its Raft messages.

Real transports and RocksDB: a, b and c host a group whose configuration records their incarnations.
While b is down, a and c commit an entry; a stops and c's database is wiped (a new incarnation, the
group re-created from its bootstrap configuration, as a node does). b, which lacks the entry, campaigns:
c's vote must not count, so b is never elected and the committed entry survives.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from gated_cluster import GROUP, Running, a_command, local_addresses, start_led_by
from support.eventually import eventually

from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState

NAMES = ("a", "b", "c")


async def test_rule_a_wiped_voter_cannot_help_elect_a_laggard(tmp_path: Path) -> None:
    addresses = local_addresses(NAMES)
    incarnations = {name: NodeStore.open(tmp_path / name) for name in NAMES}
    bootstrap = ConfState(
        voters=NAMES, incarnations=tuple(sorted((n, s.incarnation) for n, s in incarnations.items()))
    )
    for store in incarnations.values():
        store.close()
    nodes = {name: Running(name, tmp_path / name, addresses[name], bootstrap) for name in ("a", "c")}
    try:
        a = await start_led_by(nodes, addresses, "a")
        await asyncio.wait_for(a.host.submit(GROUP, a_command()), 20)
        confirmed = a.raft.status().commit
        confirmed_entries = a.store.group(GROUP).entries(1, confirmed + 1)
        await eventually(lambda: nodes["c"].raft.status().commit == confirmed, "c to hold the entry")
        for node in list(nodes.values()):
            await node.stop()

        shutil.rmtree(tmp_path / "c")  # c's disk is wiped: it comes back as a new incarnation
        nodes = {name: Running(name, tmp_path / name, addresses[name], bootstrap) for name in ("b", "c")}
        assert nodes["c"].store.incarnation != bootstrap.incarnation_of("c")
        for node in nodes.values():
            await node.start(addresses)
        b = nodes["b"]
        c = nodes["c"]
        await eventually(
            lambda: b.raft.is_leader or c.raft.is_leader or b.host.dropped_messages >= 6,
            "b's election rounds",
        )
        assert not b.raft.is_leader and not c.raft.is_leader, (
            "the wiped c and b elected a leader without the entry"
        )
        assert b.host.dropped_messages > 0
        assert confirmed_entries[-1] not in b.store.group(GROUP).entries(
            1, b.store.group(GROUP).last_index() + 1
        )
    finally:
        for node in nodes.values():
            await node.stop()
