"""A node replaying a long committed tail after a restart applies it in bounded rounds and serves the loop
between them: requests and peers are answered while the tail is replayed, not after."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gated_cluster import a_command, solo_host
from support.eventually import eventually

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.metadata.metadata_app import MetadataApp
from cluster.replication.transport import Transport
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState, Entry

GROUP = "g"
OP_BYTES = 64 * 1024
ENTRIES = 40
ROUND_BYTES = 256 * 1024


class _RecordingApp(MetadataApp):
    """The metadata application, noting the value of `clock()` at each entry it applies."""

    def __init__(self, clock: list[int]) -> None:
        super().__init__(lambda: None)
        self.clock = clock
        self.seen: list[int] = []

    def apply(self, entry: Entry, awaited: bool = False) -> list:
        self.seen.append(self.clock[0])
        return super().apply(entry, awaited)


async def test_a_restarted_node_serves_the_loop_between_rounds_of_its_replay(tmp_path: Path) -> None:
    path = tmp_path / "rocksdb"
    address = Address("127.0.0.1", free_ports(1)[0])
    store = NodeStore.open(path)
    transport = Transport("solo", address, "secret", lambda *_: None)
    host = solo_host(store, transport, snapshot_every_bytes=1 << 40, apply_bytes_per_round=ROUND_BYTES)
    await transport.start()
    host.open_group(GROUP, MetadataApp(lambda: None), ConfState(voters=("solo",)))
    host.start()
    group = host.groups[GROUP]
    host.campaign(GROUP)
    await eventually(lambda: group.raft.is_leader and group.applied >= 1, "solo to lead")
    for _ in range(ENTRIES):
        await asyncio.wait_for(host.submit(GROUP, a_command(OP_BYTES)), 20)  # one entry each
    committed = group.applied
    await host.stop()
    await transport.stop()
    store.close()

    store = NodeStore.open(path)
    transport = Transport("solo", address, "secret", lambda *_: None)
    host = solo_host(store, transport, snapshot_every_bytes=1 << 40, apply_bytes_per_round=ROUND_BYTES)
    clock = [0]
    app = _RecordingApp(clock)
    await transport.start()
    host.open_group(GROUP, app)
    assert host.groups[GROUP].applied == 0  # no snapshot: the whole log is the tail to replay

    async def count_loop_turns() -> None:
        while True:
            clock[0] += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_loop_turns())
    host.start()
    try:
        await eventually(lambda: host.groups[GROUP].applied >= committed, "the tail to be replayed")
        replayed = list(app.seen)
        assert len(replayed) >= ENTRIES
        # a round applies about ROUND_BYTES and the loop turns between rounds: later rounds see a later clock
        assert len(set(replayed)) >= ENTRIES * OP_BYTES // ROUND_BYTES // 2, replayed
    finally:
        counter.cancel()
        await host.stop()
        await transport.stop()
        store.close()
