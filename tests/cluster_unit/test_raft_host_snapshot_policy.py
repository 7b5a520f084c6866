"""When a group takes a local snapshot: after `snapshot_every` entries, or once the entry data applied
since the last snapshot reaches `snapshot_every_bytes` and SNAPSHOT_SIZE_FACTOR times that snapshot's
size, so that a restart replays a bounded tail however few (and large) the entries were."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gated_cluster import a_command, solo_host
from support.eventually import eventually

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.metadata.metadata_app import MetadataApp
from cluster.replication.raft_host import SNAPSHOT_SIZE_FACTOR
from cluster.replication.transport import Transport
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState

GROUP = "g"
EVERY_BYTES = 256 * 1024
OP_BYTES = 100 * 1024


async def test_a_group_snapshots_after_enough_entry_data_however_few_entries(tmp_path: Path) -> None:
    store = NodeStore.open(tmp_path / "rocksdb")
    transport = Transport("solo", Address("127.0.0.1", free_ports(1)[0]), "secret", lambda *_: None)
    host = solo_host(store, transport, snapshot_every_bytes=EVERY_BYTES)
    await transport.start()
    host.open_group(GROUP, MetadataApp(lambda: None), ConfState(voters=("solo",)))
    host.start()
    group = host.groups[GROUP]
    try:
        host.campaign(GROUP)
        await eventually(lambda: group.raft.is_leader and group.applied >= 1, "solo to lead")
        submitted = 0
        while group.snapshot_index == 0:
            await asyncio.wait_for(host.submit(GROUP, a_command(OP_BYTES)), 20)  # one entry each
            submitted += 1
            assert submitted * OP_BYTES <= EVERY_BYTES + 2 * OP_BYTES, "no snapshot after enough bytes"
        assert group.applied < 1000 and group.applied_bytes == 0
        first = group.snapshot_index
        # the next one waits for the larger of the threshold and SNAPSHOT_SIZE_FACTOR x this snapshot
        assert group.snapshot_bytes > 0
        needed = max(EVERY_BYTES, SNAPSHOT_SIZE_FACTOR * group.snapshot_bytes)
        while group.snapshot_index == first:
            before = group.applied_bytes
            await asyncio.wait_for(host.submit(GROUP, a_command(OP_BYTES)), 20)
            assert before < needed, "a snapshot was due and not taken"
        assert group.snapshot_index > first
    finally:
        await host.stop()
        await transport.stop()
        store.close()
