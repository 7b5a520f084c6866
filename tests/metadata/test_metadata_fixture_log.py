"""The metadata log a version-0 node wrote (tests/fixtures/replay_v0) decodes command by command and
applies to what that node held; `tests/node/test_replay_fixture.py` checks the same end to end."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import msgpack

from metadata_state.codec import decode
from metadata_state.machine import MetadataMachine
from metadata_state.replies import Conflict, Invalid, NotFound, Stale
from raft_log.storage.node_store import NodeStore
from raft_log.types import EntryKind

FIXTURE = Path(__file__).parent.parent / "fixtures" / "replay_v0"


def test_every_metadata_command_of_a_version_0_log_decodes_and_applies_to_what_that_node_held(
    tmp_path: Path,
) -> None:
    with tarfile.open(FIXTURE / "node1.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    store = NodeStore.open(tmp_path / "node1" / "rocksdb")
    try:
        log = store.group("meta")
        entries = log.entries(log.first_index(), log.last_index() + 1)
    finally:
        store.close()
    state = MetadataMachine()
    for entry in entries:
        if entry.kind == EntryKind.NORMAL and entry.data:
            for op in msgpack.unpackb(entry.data, raw=False):
                assert isinstance(op[0], str), op  # version 0: a raw list
                reply = state.apply(decode(op))
                assert not isinstance(reply, Invalid | NotFound | Stale | Conflict), (op, reply)
    expected = json.loads((FIXTURE / "expected.json").read_text())
    assert sorted(state.queues) == sorted(expected["queues"])
    users = [
        [u.name, sorted(u.tags), {"configure": u.configure, "read": u.read, "write": u.write}]
        for u in state.users.values()
    ]
    assert sorted(users) == expected["users"]
    assert state.nodes["node1"].incarnation and state.users_initialised
