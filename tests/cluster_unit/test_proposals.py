"""ProposalBatcher: operations coalesced into one entry, one future each."""

from __future__ import annotations

import msgpack
import pytest

from cluster.errors import NodeError
from cluster.replication.proposals import (
    MAX_ENTRY_BYTES,
    MAX_OPERATION_BYTES,
    ProposalBatcher,
    ProposalFailed,
)
from cluster.replication.transport import FRAME_HEADER, KIND_RAFT, MAX_FRAME_BYTES, _kind_and_body_frame
from raft_log.messages import Message, MessageType, encode_message_parts
from raft_log.types import Entry, EntryKind


async def test_pending_operations_become_one_entry_holding_their_msgpack_array() -> None:
    batcher = ProposalBatcher()
    ops = [["publish", i, b"body" * i] for i in range(20)]
    futures = [batcher.submit(op) for op in ops]
    data, taken = batcher.take()
    assert msgpack.unpackb(data) == ops and taken == futures and not batcher.has_pending()
    batcher.proposed(7, 2, taken)
    batcher.applied(7, 2, [f"reply {i}" for i in range(20)])
    assert [f.result() for f in futures] == [f"reply {i}" for i in range(20)]


async def test_an_operation_msgpack_cannot_encode_fails_its_caller_only() -> None:
    batcher = ProposalBatcher()
    good = batcher.submit(["publish", 1])
    with pytest.raises(OverflowError):
        batcher.submit(["publish", 2**70])
    with pytest.raises(TypeError):
        batcher.submit(["publish", object()])
    data, taken = batcher.take()
    assert msgpack.unpackb(data) == [["publish", 1]] and taken == [good]


async def test_a_watched_entry_resolves_once_applied_with_its_term_and_fails_if_another_entry_won() -> None:
    batcher = ProposalBatcher()
    kept, replaced = batcher.watch(5, 2), batcher.watch(6, 2)
    batcher.applied(5, 2, [])
    assert kept.result() is None and not replaced.done()
    batcher.applied(6, 3, [])
    with pytest.raises(ProposalFailed, match="overwritten"):
        replaced.result()


async def test_failing_in_flight_entries_marks_their_outcome_unknown_and_pending_ones_not() -> None:
    """An entry already in the log may still commit: its callers cannot be told it failed, only that its
    outcome is unknown. An operation never proposed, or an entry another one overwrote, did not happen."""
    batcher = ProposalBatcher()
    [in_flight] = [batcher.submit(["purge"])]
    batcher.proposed(3, 1, batcher.take()[1])
    overwritten = batcher.watch(4, 1)
    never_proposed = batcher.submit(["purge"])
    batcher.applied(4, 2, [])
    batcher.fail(ProposalFailed("lost leadership", "n2"), in_flight=True)
    failures = {
        name: future.exception()
        for name, future in [
            ("in flight", in_flight),
            ("overwritten", overwritten),
            ("never proposed", never_proposed),
        ]
    }
    assert all(isinstance(failure, ProposalFailed) for failure in failures.values())
    assert {name: failure.outcome_unknown for name, failure in failures.items()} == {
        "in flight": True,
        "overwritten": False,
        "never proposed": False,
    }
    assert failures["in flight"].leader == "n2"


async def test_an_entry_merges_operations_only_up_to_max_entry_bytes_and_a_larger_one_travels_alone() -> None:
    """A merged entry larger than a peer frame could never be replicated: the group would stall."""
    batcher = ProposalBatcher()
    part = b"x" * (MAX_ENTRY_BYTES * 2 // 5)
    futures = [batcher.submit(["publish", i, part]) for i in range(3)]
    alone = batcher.submit(["publish", 3, b"y" * (MAX_ENTRY_BYTES + 1)])
    entries = []
    while batcher.has_pending():
        entries.append(batcher.take())
    assert [len(taken) for _, taken in entries] == [2, 1, 1]
    assert [f for _, taken in entries for f in taken] == [*futures, alone]
    assert all(len(data) <= MAX_ENTRY_BYTES for data, taken in entries if len(taken) > 1)


async def test_rule_an_operation_whose_entry_cannot_fit_a_frame_is_refused_too_large() -> None:
    """An entry no follower takes would stall its group for good (and its frame reset the link every
    time it was sent): such an operation fails its caller (413) and nothing else."""
    batcher = ProposalBatcher()
    before = batcher.submit(["publish", 1])
    with pytest.raises(NodeError) as refused:
        batcher.submit(["publish", 2, bytes(MAX_FRAME_BYTES - 100)])  # its append is over the frame limit
    assert refused.value.code == "too_large"
    data, taken = batcher.take()
    assert msgpack.unpackb(data) == [["publish", 1]] and taken == [before] and not batcher.has_pending()


async def test_rule_the_largest_operation_accepted_travels_in_an_append_that_fits_a_frame() -> None:
    """With names far longer than usual (a 255-character queue, the default limit, on nodes named at
    that length too), an entry of the largest operation accepted, alone, in an append with the largest
    numbers there are, still fits the frame a peer takes."""
    op = b"x" * (MAX_OPERATION_BYTES - 5)  # bin 32: 5 bytes of header
    batcher = ProposalBatcher()
    batcher.submit(op)
    data, _ = batcher.take()
    long = 2**63 - 1
    append = Message(
        MessageType.APP,
        group=f"q{long}." + "q" * 255,
        frm="a" * 255,
        to="b" * 255,
        term=long,
        log_term=long,
        index=long,
        entries=(Entry(long, long, EntryKind.NORMAL, data),),
        commit=long,
    )
    frame = _kind_and_body_frame(KIND_RAFT, *encode_message_parts(append))
    assert len(frame) - FRAME_HEADER.size <= MAX_FRAME_BYTES


async def test_rule_entries_the_log_no_longer_holds_are_answered_outcome_unknown() -> None:
    """Compacted under a snapshot (no term), or replaced by another term's entry: never applied here."""
    batcher = ProposalBatcher()
    covered, replaced, held, beyond = (batcher.watch(index, 2) for index in (4, 5, 6, 7))
    log_terms = {5: 3, 6: 2}
    batcher.forget_replaced(log_terms.get, None, "n2")
    assert not held.done() and list(batcher.in_flight) == [6]
    for future in (covered, replaced, beyond):
        failure = future.exception()
        assert isinstance(failure, ProposalFailed) and failure.outcome_unknown and failure.leader == "n2"


async def test_rule_a_leader_keeps_the_entries_of_the_term_it_leads_in_without_looking_them_up() -> None:
    batcher = ProposalBatcher()
    older, own = batcher.watch(3, 1), batcher.watch(4, 2)
    looked_up: list[int] = []

    def term_at(index: int) -> int | None:
        looked_up.append(index)
        return None  # neither is held any more: only the older one is looked up

    batcher.forget_replaced(term_at, 2, None)
    assert looked_up == [3] and older.done() and not own.done()


async def test_rule_an_entry_proposed_at_the_index_of_one_still_awaited_answers_the_older() -> None:
    batcher = ProposalBatcher()
    older = batcher.watch(3, 1)
    newer = batcher.watch(3, 2)
    failure = older.exception()
    assert isinstance(failure, ProposalFailed) and failure.outcome_unknown
    batcher.applied(3, 2, [])
    assert newer.result() is None


def _held(batcher: ProposalBatcher) -> tuple[int, int]:
    return batcher.held_operations, batcher.held_bytes


async def test_rule_a_batcher_holds_each_operation_from_its_submit_until_its_entry_is_applied() -> None:
    """The bound counts what a leader keeps in memory for a group: operations pending, and operations in
    entries proposed and not applied yet."""
    batcher = ProposalBatcher()
    ops = [["publish", i, b"x" * 100] for i in range(3)]
    sizes = [len(msgpack.packb(op)) for op in ops]
    futures = [batcher.submit(op) for op in ops]
    assert _held(batcher) == (3, sum(sizes))
    batcher.proposed(7, 1, batcher.take()[1])
    assert _held(batcher) == (3, sum(sizes))
    later = batcher.submit(ops[0])
    assert _held(batcher) == (4, sum(sizes) + sizes[0])
    batcher.applied(7, 1, [None] * 3)
    assert _held(batcher) == (1, sizes[0]) and all(f.done() for f in futures)
    batcher.proposed(8, 1, batcher.take()[1])
    batcher.applied(8, 1, [None])
    assert _held(batcher) == (0, 0) and later.done()


async def test_rule_the_bound_is_reached_at_either_limit_and_left_once_applied() -> None:
    batcher = ProposalBatcher()
    size = len(msgpack.packb(["publish", b"x" * 100]))
    assert not batcher.holds_at_least(1, 1)
    for _ in range(2):
        batcher.submit(["publish", b"x" * 100])
    assert batcher.holds_at_least(2, 10 * size)  # by operations
    assert batcher.holds_at_least(10, 2 * size)  # by bytes
    assert not batcher.holds_at_least(3, 2 * size + 1)
    batcher.proposed(1, 1, batcher.take()[1])
    batcher.applied(1, 1, [])
    assert not batcher.holds_at_least(1, 1)


async def test_rule_operations_that_fail_or_are_refused_are_held_no_more() -> None:
    """Whatever ends an operation's wait (refused at proposal, lost leadership, an entry overwritten,
    replaced or gone from the log) releases its share of the bound: a leader that lost its entries takes
    publishes again."""
    batcher = ProposalBatcher()
    batcher.submit(["a"])
    batcher.refuse(batcher.take()[1], ProposalFailed("not the leader"))
    assert _held(batcher) == (0, 0)
    for index in (1, 2, 3):
        batcher.submit(["b", index])
        batcher.proposed(index, 1, batcher.take()[1])
    batcher.submit(["pending"])
    batcher.applied(1, 2, [])  # overwritten by a newer leader's entry
    batcher.proposed(2, 2, [])  # replaced at its index
    batcher.forget_replaced({3: 2}.get, None, None)  # gone from the log
    assert _held(batcher) == (1, len(msgpack.packb(["pending"])))
    batcher.submit(["c"])
    batcher.proposed(4, 2, batcher.take()[1])
    batcher.fail(ProposalFailed("lost leadership"), in_flight=True)
    assert _held(batcher) == (0, 0) and not batcher.in_flight


async def test_rule_a_watched_entry_counts_no_operation() -> None:
    batcher = ProposalBatcher()
    batcher.watch(1, 1)
    assert _held(batcher) == (0, 0)
    batcher.applied(1, 1, [])
    assert _held(batcher) == (0, 0)
