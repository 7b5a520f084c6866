"""Snapshots of a version only read (`queue_state/legacy_formats.py`) restore as the code that wrote them
meant; `test_queue_publishers.py` and `test_queue_seal.py` check the rest of version 1."""

from __future__ import annotations

import msgpack
from queue_state_helpers import enqueue, make_machine

from queue_state.commands import Checkout, EntryMeta
from queue_state.machine import QueueMachine


def test_a_version_1_consumer_row_written_before_consumer_timeouts_restores_without_a_timeout() -> None:
    m = make_machine()
    enqueue(m, 1, count=3)
    m.apply(EntryMeta(2), Checkout("c", prefetch=2))
    chunks = list(m.snapshot_chunks())
    header = msgpack.unpackb(chunks[0], raw=False)
    del header["sealed"]
    consumers = header["consumers"]
    assert consumers["consumers"] == [["c", 2, 0, 0, None]]
    old_rows = {**consumers, "consumers": [["c", 2, 0, 0]]}  # name, prefetch, priority, registration
    restored = QueueMachine.restore(
        [msgpack.packb({**header, "version": 1, "consumers": old_rows}), *chunks[1:]]
    )
    assert restored.consumers() == m.consumers()
    assert [d.id for d in restored.checked_out("c")] == [1, 2]
    assert restored.stats() == m.stats()
