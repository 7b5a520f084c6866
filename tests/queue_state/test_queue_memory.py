"""The in-memory index stays small: under 200 bytes per ready message (bodies live elsewhere)."""

from __future__ import annotations

import tracemalloc

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
