"""The pysyncobj 0.3.17 failures that made us write our own Raft, replayed against our core.

E1: a deposed leader holding an entry it never replicated is caught up by a newer leader through a
snapshot or an append whose previous entry does not match; pysyncobj advanced its commit index
without a log match and applied (and confirmed) the never-replicated entry.
"""

from __future__ import annotations

import random

import pytest
from raft_harness import Harness

from raft_log.confchange import ConfChange, ConfChangeKind
from raft_log.core import Config, RaftNode
from raft_log.errors import ConfChangeInProgressError, NotLeaderError
from raft_log.messages import Message, MessageType
from raft_log.ready import persist_ready
from raft_log.storage.memory_storage import MemoryStorage
from raft_log.types import ConfState, Entry, HardState, SnapshotMeta

ABC = ConfState(voters=("a", "b", "c"))
NEVER_REPLICATED = b"confirmed-by-nobody"


class Driver:
    """One node and the driver loop, recording everything it would apply or acknowledge."""

    def __init__(self, raft: RaftNode, storage: MemoryStorage) -> None:
        self.raft, self.storage = raft, storage
        self.applied: list[Entry] = []
        self.sent: list[Message] = []

    def run(self) -> None:
        while self.raft.has_ready():
            rd = self.raft.ready()
            persist_ready(self.storage, rd)
            self.sent.extend(rd.messages)
            self.applied.extend(rd.committed_entries)
            self.raft.advance(rd)

    def step(self, **fields: object) -> None:
        self.raft.step(Message(group="g", frm="b", to="a", **fields))  # type: ignore[arg-type]
        self.run()


def deposed_leader_with_unreplicated_entry() -> Driver:
    """Node a led term 1, committed its no-op (index 1), then appended X at index 2 and lost contact."""
    storage = MemoryStorage(ABC)
    raft = RaftNode(Config("a", "g", pre_vote=False), storage, random.Random(0))
    driver = Driver(raft, storage)
    raft.campaign()
    driver.step(type=MessageType.VOTE_RESP, term=1)
    assert raft.is_leader
    driver.step(type=MessageType.APP_RESP, term=1, index=1)
    assert raft.status().commit == 1
    assert raft.propose(NEVER_REPLICATED) == 2
    driver.run()
    return driver


def assert_never_applied_or_committed(driver: Driver) -> None:
    assert all(e.data != NEVER_REPLICATED for e in driver.applied)
    status = driver.raft.status()
    if status.last_index >= 2:
        assert driver.raft.entry_term(2) != 1 or status.commit < 2
    assert driver.storage.initial_state()[0].commit == status.commit


def test_e1_deposed_leader_refuses_a_mismatched_append_and_keeps_its_commit_index() -> None:
    driver = deposed_leader_with_unreplicated_entry()
    driver.step(
        type=MessageType.APP,
        term=2,
        index=2,
        log_term=2,
        entries=(Entry(3, 2, data=b"b's"),),
        commit=3,
    )
    reply = driver.sent[-1]
    assert reply.type is MessageType.APP_RESP and reply.reject
    assert driver.raft.status().commit == 1
    assert_never_applied_or_committed(driver)


def test_e1_deposed_leader_heartbeat_commit_beyond_match_does_not_apply_its_entry() -> None:
    driver = deposed_leader_with_unreplicated_entry()
    driver.step(type=MessageType.HEARTBEAT, term=2, commit=1)  # the leader sends min(match, commit)
    assert_never_applied_or_committed(driver)


@pytest.mark.parametrize("snapshot_index", [2, 3])
def test_e1_deposed_leader_installs_a_newer_leaders_snapshot_instead_of_committing_its_entry(
    snapshot_index: int,
) -> None:
    driver = deposed_leader_with_unreplicated_entry()
    meta = SnapshotMeta(index=snapshot_index, term=2, conf=ABC)
    driver.step(type=MessageType.SNAP, term=2, snapshot=meta, chunk_data=b"b's state", chunk_done=True)
    assert driver.storage.snapshot().meta == meta
    assert driver.raft.entry_term(2) != 1
    driver.step(
        type=MessageType.APP,
        term=2,
        index=snapshot_index,
        log_term=2,
        entries=(Entry(snapshot_index + 1, 2, data=b"next"),),
        commit=snapshot_index + 1,
    )
    assert [e.data for e in driver.applied] == [b"", b"next"]
    assert_never_applied_or_committed(driver)


def test_e1_deposed_leader_matching_append_after_a_conflict_replaces_the_unreplicated_entry() -> None:
    driver = deposed_leader_with_unreplicated_entry()
    driver.step(
        type=MessageType.APP, term=2, index=1, log_term=1, entries=(Entry(2, 2, data=b"b's"),), commit=2
    )
    assert [e.data for e in driver.applied] == [b"", b"b's"]
    assert_never_applied_or_committed(driver)


def test_two_back_to_back_membership_changes_the_second_is_refused() -> None:
    h = Harness()
    h.elect("a")
    h["a"].propose_conf_change(ConfChange(ConfChangeKind.ADD_LEARNER, "d"))
    with pytest.raises(ConfChangeInProgressError):
        h["a"].propose_conf_change(ConfChange(ConfChangeKind.REMOVE, "c"))
    h.stabilize()
    h["a"].propose_conf_change(ConfChange(ConfChangeKind.REMOVE, "c"))  # allowed once the first committed


def test_an_append_that_matches_never_truncates_the_entries_after_it() -> None:
    storage = MemoryStorage(ABC)
    storage.append([Entry(1, 1), Entry(2, 1, data=b"x"), Entry(3, 1, data=b"y")])
    storage.set_hard_state(HardState(term=1))
    driver = Driver(RaftNode(Config("a", "g"), storage, random.Random(0)), storage)
    driver.step(type=MessageType.APP, term=1, index=0, log_term=0, entries=(Entry(1, 1),), commit=1)
    assert driver.storage.last_index() == 3
    assert driver.sent[-1].index == 1  # acknowledges only what this append proved, not the old tail
    driver.step(
        type=MessageType.APP, term=1, index=1, log_term=1, entries=(Entry(2, 1, data=b"x"),), commit=1
    )
    assert [driver.raft.entry_term(i) for i in (1, 2, 3)] == [1, 1, 1]


def test_a_stale_ack_never_moves_next_index_backwards() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.add("b")
    for i in range(3):
        h["a"].propose(f"p{i}".encode())
    h.stabilize()
    h.isolated.clear()
    h.tick_all()
    progress = h["a"].status().progress["b"]
    for stale_index in (0, 1, 2, 3):
        h["a"].step(Message(MessageType.APP_RESP, "g", "b", "a", term=1, index=stale_index))
        after = h["a"].status().progress["b"]
        assert (after.match, after.next) == (progress.match, progress.next)


def test_propose_on_an_isolated_follower_raises_instead_of_dropping() -> None:
    h = Harness()
    h.elect("a")
    h.isolated.add("c")
    with pytest.raises(NotLeaderError) as raised:
        h["c"].propose(b"x")
    assert raised.value.leader_hint == "a"
    for _ in range(30):
        h["c"].tick()
        h.stabilize()
    with pytest.raises(NotLeaderError):
        h["c"].propose(b"x")
