"""Publisher confirms on one channel (`api.amqp.confirms`): every tag settled by exactly one frame, as
a client reads them (a `multiple` frame settles every unsettled tag up to its own), in any order."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.amqp.confirms import Confirm, ConfirmTags


def test_a_run_settled_in_order_is_one_frame_with_multiple() -> None:
    tags = ConfirmTags()
    first, second = tags.take(3), tags.take(2)
    assert tags.settle(first, ack=True) == [Confirm(3, True, True)]
    assert tags.settle(second, ack=False) == [Confirm(5, True, False)]
    assert tags.unsettled == 0


def test_a_run_settled_before_an_earlier_one_is_one_frame_per_tag() -> None:
    tags = ConfirmTags()
    first, second, third = tags.take(1), tags.take(2), tags.take(1)
    assert tags.settle(second, ack=True) == [Confirm(2, False, True), Confirm(3, False, True)]
    assert tags.unsettled == 2
    assert tags.settle(first, ack=True) == [Confirm(1, False, True)]
    assert tags.settle(third, ack=True) == [Confirm(4, False, True)]
    assert tags.unsettled == 0


def test_a_tag_is_settled_once() -> None:
    tags = ConfirmTags()
    taken = tags.take(2)
    tags.settle(taken, ack=True)
    with pytest.raises(ValueError, match="not all taken and unsettled"):
        tags.settle(taken, ack=True)
    with pytest.raises(ValueError, match="not all taken and unsettled"):
        tags.settle(range(3, 4), ack=True)  # never taken


@given(st.lists(st.tuples(st.integers(1, 4), st.booleans()), min_size=1, max_size=30), st.randoms())
def test_any_order_settles_every_tag_once_with_its_batchs_outcome(
    batches: list[tuple[int, bool]], rng: random.Random
) -> None:
    tags = ConfirmTags()
    taken = [(tags.take(size), ack) for size, ack in batches]
    rng.shuffle(taken)
    settled: dict[int, bool] = {}
    for batch, ack in taken:
        for frame in tags.settle(batch, ack):
            covered = range(1, frame.delivery_tag + 1) if frame.multiple else [frame.delivery_tag]
            newly = [tag for tag in covered if tag not in settled]
            assert frame.delivery_tag in newly  # a frame never speaks only of settled tags
            assert set(newly) <= set(batch)  # nor of a batch still in flight
            settled.update(dict.fromkeys(newly, frame.ack))
        assert all(settled[tag] == ack for tag in batch)
    assert sorted(settled) == list(range(1, sum(size for size, _ in batches) + 1))
    assert tags.unsettled == 0
