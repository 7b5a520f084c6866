"""A replica that lost entries it may have acknowledged is repaired before it votes again (finding 6 of #17).

RocksDB writes a batch atomically, so a damaged or missing entry found at open is damage, not a torn
write: the replica may have acknowledged it. Voting on the shorter log could elect a leader without a
committed entry; counting its acks could commit on a majority that does not hold the log.
"""

from __future__ import annotations

from dataclasses import replace

import msgpack
from raft_harness import Harness

from raft_log.confchange import ConfChange, ConfChangeKind
from raft_log.messages import Message, MessageType, decode_message, encode_message
from raft_log.storage.memory_storage import MemoryStorage
from raft_log.types import UNKNOWN_VOTE, HardState, Repair


def restart_damaged(h: Harness, node: str, keep: int, through: int | None = None) -> Repair:
    """Restart `node` holding only its entries through `keep`, as recovery leaves a damaged log."""
    old = h.storages[node]
    hard_state, conf = old.initial_state()
    storage = MemoryStorage(conf)
    storage.append(old.entries(1, keep + 1))
    storage.set_hard_state(replace(hard_state, commit=min(hard_state.commit, keep)))
    repair = Repair("entry damaged", keep + 1, through or max(old.last_index(), hard_state.commit))
    h.add(node, storage, repair=repair)
    return repair


def isolate_b(h: Harness) -> None:
    h.dropped.append(lambda m: "b" in (m.frm, m.to))


def test_rule_a_repairing_replica_does_not_vote_until_repaired() -> None:
    h = Harness()
    leader = h.elect("a")
    isolate_b(h)  # b falls behind
    index = leader.propose(b"acknowledged by a and c")
    h.stabilize()
    assert leader.status().commit == index
    restart_damaged(h, "c", keep=index - 1)  # c lost the entry it acknowledged
    h.dropped.clear()
    h.isolated.add("a")  # the only healthy holder of the entry is down
    h.tick_all(40)
    assert not h["b"].is_leader and not h["c"].is_leader, "elected a leader without a committed entry"

    h.isolated.clear()
    h.tick_all(40)  # a is elected again (b lacks the entry), repairs c and catches b up
    assert h["c"].repair is None
    assert h.storages["c"].entries(index, index + 1)[0].data == b"acknowledged by a and c"
    h.isolated.add("a")
    h.tick_all(40)
    new = next(node for node in ("b", "c") if h[node].is_leader)  # c votes (and campaigns) again
    assert h.storages[new].entries(index, index + 1)[0].data == b"acknowledged by a and c"


def test_rule_the_leader_resets_match_on_the_repair_flag_and_the_replica_catches_up() -> None:
    h = Harness()
    leader = h.elect("a")
    for n in range(5):
        leader.propose(b"%d" % n)
    h.stabilize()
    last = leader.status().last_index
    assert leader.status().progress["c"].match == last
    restart_damaged(h, "c", keep=last - 3)
    h.tick_all(3)
    assert h["c"].repair is None
    assert h.storages["c"].entries(1, last + 1) == h.storages["a"].entries(1, last + 1)
    assert leader.status().progress["c"].match == last


def test_rule_a_repairing_replica_is_not_counted_towards_a_commit() -> None:
    h = Harness()
    leader = h.elect("a")
    last = leader.status().last_index
    restart_damaged(h, "c", keep=last, through=1000)  # it may have acknowledged far more than it holds
    isolate_b(h)
    index = leader.propose(b"y")
    h.tick_all(3)
    assert h["c"].repair is not None and h.storages["c"].last_index() == index
    assert leader.status().commit < index, "committed on a and a repairing c"
    h.dropped.clear()
    h.tick_all(3)
    assert leader.status().commit >= index


def test_the_repairing_flag_is_an_optional_18th_field_of_the_wire_format() -> None:
    plain = Message(MessageType.APP_RESP, "g", "c", "a", term=2, index=7)
    assert len(msgpack.unpackb(encode_message(plain))) == 17  # what peers without the flag decode
    flagged = replace(plain, reject=True, reject_hint=5, repairing=True)
    assert len(msgpack.unpackb(encode_message(flagged))) == 18
    assert decode_message(encode_message(flagged)) == flagged
    assert decode_message(encode_message(plain)).repairing is False


def test_rule_a_rebuilt_hard_state_grants_no_vote_in_its_term_only_in_later_ones() -> None:
    h = Harness()
    storage = MemoryStorage(h.conf)
    storage.set_hard_state(HardState(term=2, vote=UNKNOWN_VOTE))  # as recovery rebuilds a lost one
    h.add("c", storage)
    for term, granted in ((2, False), (3, True)):
        h["c"].step(Message(MessageType.VOTE, "g", "b", "c", term=term))
        (answer,) = [m for m in h.take(MessageType.VOTE_RESP) if m.frm == "c"]
        assert answer.reject is not granted


def test_rule_a_repair_does_not_apply_again_a_membership_change_the_stored_membership_holds() -> None:
    h = Harness()
    leader = h.elect("a")
    leader.propose_conf_change(ConfChange(ConfChangeKind.ADD_LEARNER, "d"))
    h.stabilize()
    last = leader.status().last_index
    assert h["c"].status().conf.learners == ("d",)
    old = h.storages["c"]
    storage = MemoryStorage(old.initial_state()[1])  # the membership as of the commit, change included
    storage.append(old.entries(1, last))  # the change's entry is lost
    storage.set_hard_state(replace(old.initial_state()[0], commit=last - 1))
    h.add("c", storage, repair=Repair("entry damaged", last, last, conf_through=last))
    h.tick_all(3)  # the leader resends the change; c must not apply it a second time
    assert h["c"].repair is None and h["c"].status().conf.learners == ("d",)


def restart_cut(h: Harness, node: str, keep: int) -> None:
    """Restart `node` holding only its entries through `keep` and a hard state as of then, with nothing
    telling it so: a WAL whose tail was cut off (RocksDB replays what is left and reports no damage)."""
    old = h.storages[node]
    hard_state, conf = old.initial_state()
    storage = MemoryStorage(conf)
    storage.append(old.entries(1, keep + 1))
    storage.set_hard_state(replace(hard_state, commit=min(hard_state.commit, keep)))
    h.add(node, storage)


def test_seed10066_a_follower_whose_log_was_silently_cut_is_caught_up_again() -> None:
    """Schedule seed 10066 cut node1's WAL tail: it came back holding less than it had acknowledged,
    without knowing. Its rejections are below the leader's match for it, which the leader took for
    stale answers, so it was never sent its entries again."""
    h = Harness()
    leader = h.elect("a")
    for n in range(5):
        leader.propose(b"%d" % n)
    h.stabilize()
    last = leader.status().last_index
    assert leader.status().progress["c"].match == last
    restart_cut(h, "c", keep=last - 3)
    h.tick_all(10)
    assert h.storages["c"].last_index() == last, "the leader never re-sent what the follower lost"
    assert h.storages["c"].entries(1, last + 1) == h.storages["a"].entries(1, last + 1)
    assert leader.status().progress["c"].match == last
