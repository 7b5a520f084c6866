"""What a leader spends answering a poll for deliveries: reading the bodies and encoding the answer.

`python -m bench.deliveries [--count N] [--rounds R]`: N stored messages (1 KiB and 16 KiB, published as
text or binary) are read through `BodyStore.rows` into `MessageRow`s and encoded as the JSON
answer and as the msgpack one; the best of R rounds is printed in ms per batch (reading included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable

import msgpack

from api.deliveries import json_deliveries, msgpack_deliveries
from cluster.queues.queue_replica import QueueReplica
from cluster.queues.queue_results import MessageRow
from cluster.replication.entry_codec import encode_queue_op
from cluster.replication.stored_message import StoredMessage
from queue_state.arguments import QueueConfig
from queue_state.commands import Enqueue, EntryMeta, NewMessage
from queue_state.effects import Delivery
from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState, Entry, EntryKind

SIZES = (1024, 16384)
ENCODINGS = ("utf8", "base64")


def best_seconds(action: Callable[[], object], rounds: int) -> float:
    """The fastest of `rounds` calls of `action`."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def measure(directory: str, count: int, size: int, encoding: str, rounds: int) -> tuple[float, float, float]:
    """Seconds to read `count` bodies of `size` bytes, and to read and encode them as JSON and as msgpack."""
    store = NodeStore.open(tempfile.mkdtemp(prefix="deliveries-", dir=directory))
    try:
        group_log = store.create_group("bench", ConfState(voters=("n1",)))
        replica = QueueReplica("bench", "bench", QueueConfig(), group_log)
        body = b"x" * size if encoding == "utf8" else os.urandom(size)
        messages = [StoredMessage(body, {}, encoding)] * count
        enqueue = Enqueue(tuple(NewMessage(size) for _ in messages))
        entry = Entry(
            1, 1, EntryKind.NORMAL, msgpack.packb([encode_queue_op(EntryMeta(0), enqueue, messages)])
        )
        group_log.append([entry])
        store.commit(sync=False)
        (enqueued,) = replica.apply(entry)
        deliveries = [Delivery(message_id, 0, False, 0) for message_id in enqueued.ids]

        def rows() -> list[MessageRow]:
            return replica.bodies.rows(deliveries)

        read = best_seconds(rows, rounds)
        as_json = best_seconds(lambda: json_deliveries(rows()), rounds)
        as_msgpack = best_seconds(lambda: msgpack_deliveries(rows()), rounds)
        return read, as_json, as_msgpack
    finally:
        store.close()


def main() -> None:
    """Run every size and encoding and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="messages per answer")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per figure (the best is kept)")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="bench-deliveries-")
    try:
        print(f"{args.count} messages per answer, best of {args.rounds} rounds")
        print(f"{'body':>13} {'read ms':>8} {'JSON ms':>8} {'msgpack ms':>11}")
        for size in SIZES:
            for encoding in ENCODINGS:
                read, as_json, as_msgpack = measure(directory, args.count, size, encoding, args.rounds)
                label = f"{size // 1024} KiB {encoding}"
                print(f"{label:>13} {read * 1e3:>8.2f} {as_json * 1e3:>8.2f} {as_msgpack * 1e3:>11.2f}")
    finally:
        shutil.rmtree(directory)


if __name__ == "__main__":
    main()
