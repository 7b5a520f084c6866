"""Publisher dedup: a 2xx answer (Enqueued or Duplicate) always means the seq's messages were enqueued.

Finding 3 of issue 17: a seq arriving for the first time below the window's floor was answered
`Duplicate(None)` (HTTP 201) and never enqueued.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from queue_state_helpers import enqueue, make_machine

from queue_state.effects import Duplicate, Enqueued, Failure
from queue_state.machine import QueueMachine
from queue_state.publishers import WINDOW_SIZE

TOO_OLD = "seq_too_old"


def test_rule_a_seq_below_the_floor_is_never_confirmed_without_an_enqueue() -> None:
    m = make_machine()
    for seq in range(2, WINDOW_SIZE + 3):  # seq 1 is delayed while 1025 later seqs commit
        enqueue(m, 1, publisher="p", seq=seq)
    reply, _ = enqueue(m, 2, publisher="p", seq=1)
    assert isinstance(reply, Failure) and reply.code == TOO_OLD, reply
    assert isinstance(enqueue(m, 3, publisher="p", seq=1)[0], Failure)  # refused again, never recorded
    assert m.stats().messages_ready == WINDOW_SIZE + 1


def test_rule_a_delayed_pipelined_seq_is_refused_while_older_seqs_stay_duplicates() -> None:
    m = make_machine()
    seqs = [*range(1, 5), *range(6, WINDOW_SIZE + 11)]  # 5 is held back; 1-4 and 6-10 get trimmed
    for seq in seqs:
        enqueue(m, 1, publisher="p", seq=seq)
    assert enqueue(m, 2, publisher="p", seq=3)[0] == Duplicate(None)  # at or below the watermark 4
    for unknown in (5, 7):  # above the watermark and below the floor: never seen, or seen and trimmed
        reply, _ = enqueue(m, 2, publisher="p", seq=unknown)
        assert isinstance(reply, Failure) and reply.code == TOO_OLD, (unknown, reply)
    assert enqueue(m, 2, publisher="p", seq=11)[0] == Duplicate((10,))  # seqs 1-4 took ids 1-4
    assert enqueue(m, 2, publisher="p", seq=WINDOW_SIZE + 11)[0] == Enqueued((len(seqs) + 1,))
    assert m.stats().messages_ready == len(seqs) + 1


def test_rule_seq_zero_never_sent_is_refused_not_a_duplicate() -> None:
    m = make_machine()
    for seq in range(1, WINDOW_SIZE + 2):
        enqueue(m, 1, publisher="p", seq=seq)
    reply, _ = enqueue(m, 2, publisher="p", seq=0)
    assert isinstance(reply, Failure) and reply.code == TOO_OLD, reply
    assert enqueue(m, 2, publisher="p", seq=1)[0] == Duplicate(None)


@st.composite
def arrivals(draw: st.DrawFn) -> list[int]:
    """One publisher's seqs 1..n in the order they reach the log: mostly in order, but some requests
    come late (a little, or past the whole window), some never arrive and some are sent again."""
    count = draw(st.integers(1, 64) | st.integers(WINDOW_SIZE + 1, WINDOW_SIZE + 128))
    order = list(range(1, count + 1))
    a_little, past_the_window = st.integers(1, 64), st.integers(WINDOW_SIZE, WINDOW_SIZE + 128)
    for _ in range(min(count - 1, draw(st.integers(0, 4)))):
        index = draw(st.integers(0, min(len(order) - 1, 128)) | st.integers(0, len(order) - 1))
        fate = draw(st.sampled_from(["late", "past the window", "lost", "sent again"]))
        seq = order[index] if fate == "sent again" else order.pop(index)
        if fate != "lost":
            delay = draw(past_the_window if fate == "past the window" else a_little | past_the_window)
            order.insert(min(len(order), index + delay), seq)
    return order


@settings(max_examples=200, deadline=None)
@given(arrivals())
def test_rule_a_2xx_answer_always_means_the_seq_was_enqueued_exactly_once(order: list[int]) -> None:
    m = make_machine()
    enqueued: dict[int, tuple[int, ...]] = {}
    taken_up_to = 0  # seqs 1..taken_up_to were all enqueued
    for seq in order:
        reply, _ = enqueue(m, 1, publisher="p", seq=seq)
        if isinstance(reply, Enqueued):
            assert seq not in enqueued
            enqueued[seq] = reply.ids
            while taken_up_to + 1 in enqueued:
                taken_up_to += 1
        elif isinstance(reply, Duplicate):
            assert seq in enqueued, f"seq {seq} confirmed as a duplicate but never enqueued"
            assert reply.ids in (None, enqueued[seq])
        else:
            assert isinstance(reply, Failure) and reply.code == TOO_OLD, reply
            assert seq > taken_up_to, f"seq {seq} is a true duplicate, refused as too old"
    assert m.stats().messages_ready == len(enqueued)


def test_watermark_floor_and_window_survive_a_snapshot() -> None:
    m = make_machine()
    for seq in [*range(1, 5), *range(6, WINDOW_SIZE + 11)]:
        enqueue(m, 1, publisher="p", seq=seq)
    restored = QueueMachine.restore(m.snapshot_chunks())
    for seq in (3, 5, 7, 11, WINDOW_SIZE + 11):
        assert enqueue(restored, 2, publisher="p", seq=seq) == enqueue(m, 2, publisher="p", seq=seq)
    assert b"".join(restored.snapshot_chunks()) == b"".join(m.snapshot_chunks())


# Written by the queue_state of commit cb08648 (snapshot version 1, windows without a watermark) with
# WINDOW_SIZE patched to 4: publisher "p" sent seqs 1, 2, 3, 5 (ids 1-4); publisher "late" sent seqs
# 1-7 (ids 5-11), so its window holds 4-7 above floor 4; then the queue was purged.
VERSION_1_SNAPSHOT = [
    bytes.fromhex(
        "8aa776657273696f6e01a46e616d65a171a6636f6e66696781ac782d71756575652d74797065a671756f72756da36e"
        "6f77cf0000018bcfe56800a76e6578745f69640cae6c6173745f6163746976655f6d73cf0000018bcfe56800b06578"
        "706972795f7369676e616c6c6564c2ad646561645f6c6574746572656480a764726f7070656480a9636f6e73756d65"
        "727384b16e6578745f726567697374726174696f6e00a9636f6e73756d65727390a9726f746174696f6e7390a66163"
        "74697665c0"
    ),
    bytes.fromhex(
        "92ac646561645f6c65747465727383a6776f726b6572c0ab6f75747374616e64696e6790a770656e64696e6790"
    ),
    bytes.fromhex(
        "92aa7075626c6973686572739294a17000cf0000018bcfe56800949301010193020201930303019305040194a46c61"
        "746504cf0000018bcfe5680094930408019305090193060a0193070b01"
    ),
    bytes.fromhex("92a3656e64c0"),
]


def test_a_version_1_snapshot_restores_with_the_watermark_its_windows_prove() -> None:
    m = QueueMachine.restore(VERSION_1_SNAPSHOT)
    now = 1_700_000_000_001
    assert enqueue(m, now, publisher="p", seq=2)[0] == Duplicate((2,))
    assert enqueue(m, now, publisher="p", seq=4)[0] == Enqueued((12,))  # a gap in the window: new
    assert enqueue(m, now, publisher="late", seq=5)[0] == Duplicate((9,))
    reply, _ = enqueue(m, now, publisher="late", seq=2)  # below floor 4: version 1 kept no watermark
    assert isinstance(reply, Failure) and reply.code == TOO_OLD, reply
    assert enqueue(m, now, publisher="late", seq=8)[0] == Enqueued((13,))
    assert m.stats().messages_ready == 2
