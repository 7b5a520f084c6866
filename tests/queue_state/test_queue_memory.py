"""The in-memory index stays small: under 200 bytes per ready message (bodies live elsewhere), under 300
per grouped one with ten to a group, under 1,000 for a group of its own."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

from queue_state.arguments import parse_arguments
from queue_state.commands import Enqueue, EntryMeta, NewMessage
from queue_state.machine import QueueMachine

MESSAGES = 100_000
BATCH = 100


def test_a_ready_message_costs_under_200_bytes() -> None:
    machine = QueueMachine("q", parse_arguments({"x-message-ttl": 60_000}))
    batch = tuple(NewMessage(1000 + i) for i in range(BATCH))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for seq in range(MESSAGES // BATCH):
            machine.apply(EntryMeta(1_700_000_000_000 + seq), Enqueue(batch, "publisher", seq))
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert machine.stats().messages_ready == MESSAGES
    assert used / MESSAGES < 200


@pytest.mark.parametrize(
    ("group_of", "most"), [(lambda i: f"order-{i // 10}", 300), (lambda i: f"order-{i}", 1000)]
)
def test_a_grouped_ready_message_costs_its_share_of_its_group(
    group_of: Callable[[int], str], most: int
) -> None:
    machine = QueueMachine("q", parse_arguments({"x-message-ttl": 60_000, "x-message-groups": True}))
    batches = [
        tuple(NewMessage(1000, group=group_of(seq * BATCH + i)) for i in range(BATCH))
        for seq in range(MESSAGES // BATCH)
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for seq, batch in enumerate(batches):
            machine.apply(EntryMeta(1_700_000_000_000 + seq), Enqueue(batch, "publisher", seq))
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert machine.stats().messages_ready == MESSAGES
    assert used / MESSAGES < most
