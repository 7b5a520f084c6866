"""A replica added to a running group starts empty and installs the leader's index-0 snapshot."""

from __future__ import annotations

import random
from pathlib import Path

from cli.node_processes import free_ports
from cluster.config import Address
from cluster.metadata.metadata_app import MetadataApp
from cluster.replication.raft_host import RaftHost
from cluster.replication.transport import KIND_RAFT, Transport
from raft_log.messages import Message, MessageType, encode_message
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState, SnapshotMeta


async def test_new_replica_installs_index_zero_snapshot_that_only_brings_membership(tmp_path: Path) -> None:
    store = NodeStore.open(tmp_path / "rocksdb")
    transport = Transport("new", Address("127.0.0.1", free_ports(1)[0]), "secret", lambda *_: None)
    host = RaftHost(
        "new",
        store,
        transport,
        tick_ms=100,
        election_ticks=10,
        heartbeat_ticks=2,
        snapshot_every=1000,
        batch_delay_ms=0,
        rng=random.Random(1),
    )
    changes: list[int] = []
    app = MetadataApp(lambda: changes.append(1))
    try:
        host.open_group("meta", app)  # no bootstrap: an empty membership, waiting for a leader
        initial = ConfState(voters=("a", "b", "c"))
        snapshot = Message(
            MessageType.SNAP,
            "meta",
            frm="a",
            to="new",
            term=1,
            snapshot=SnapshotMeta(index=0, term=0, conf=initial),
            chunk_done=True,
        )
        host.on_frame("a", KIND_RAFT, encode_message(snapshot))
        await host.process_once()
        assert host.groups["meta"].raft.status().conf == initial
        assert app.state.nodes == {} and app.state.queues == {}
    finally:
        store.close()
    reopened = NodeStore.open(tmp_path / "rocksdb")
    try:
        group = reopened.group("meta")
        assert group.initial_state()[1] == initial
        assert group.snapshot().meta.conf == initial  # a restart replays the log from this membership
    finally:
        reopened.close()
