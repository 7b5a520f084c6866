"""Throughput and memory of the quorum-queue state machine (`queue_state.QueueMachine`), single core.

`python -m bench.state_machine [--seconds S] [--messages N]` prints:
- applied commands/s and messages/s for cycles of Enqueue(batch of 100) + Settle(those 100), with one
  consumer checked out (prefetch 1000), so every message is delivered and acked;
- the same cycle when each command is also encoded in its operation envelope, packed, unpacked and
  decoded (what a replica pays per operation of a log entry);
- enqueue-only throughput while the queue grows;
- bytes per ready message with tracemalloc at N ready messages (default 1,000,000), without and with
  a TTL, and with priorities (each message of a batch at the next of 10 levels).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import msgpack

from cluster.replication.entry_codec import decode_queue_op, encode_queue_op
from queue_state.arguments import QueueConfig
from queue_state.commands import Checkout, Command, Enqueue, EntryMeta, NewMessage, Settle
from queue_state.effects import Effect, Reply
from queue_state.machine import QueueMachine

BATCH = 100
START_MS = 1_700_000_000_000


def _batch(levels: int = 1) -> tuple[NewMessage, ...]:
    """A batch of messages, spread over `levels` priorities in turn."""
    return tuple(NewMessage(512 + i, priority=i % levels) for i in range(BATCH))


def cycle_rate(seconds: float, through_codec: bool) -> tuple[float, float]:
    """(commands/s, messages/s) for enqueue+settle cycles with one consumer that takes everything."""
    machine = QueueMachine("bench", QueueConfig())
    machine.apply(EntryMeta(START_MS), Checkout("consumer", prefetch=1000))
    batch = _batch()

    def through(meta: EntryMeta, cmd: Command) -> tuple[Reply, list[Effect]]:
        op = decode_queue_op(msgpack.unpackb(msgpack.packb(encode_queue_op(meta, cmd)), raw=False))
        return machine.apply(op.meta, op.command)

    apply: Callable = through if through_codec else machine.apply
    cycles = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        meta = EntryMeta(START_MS + cycles)
        reply, _ = apply(meta, Enqueue(batch, "publisher", cycles))
        apply(meta, Settle(reply.ids, "consumer"))
        cycles += 1
    elapsed = time.perf_counter() - started
    return 2 * cycles / elapsed, BATCH * cycles / elapsed


def enqueue_rate(messages: int) -> float:
    """Messages/s enqueued (no consumer) until the queue holds `messages`."""
    machine = QueueMachine("bench", QueueConfig())
    batch = _batch()
    started = time.perf_counter()
    for seq in range(messages // BATCH):
        machine.apply(EntryMeta(START_MS + seq), Enqueue(batch, "publisher", seq))
    return messages / (time.perf_counter() - started)


def bytes_per_ready_message(messages: int, message_ttl: int | None, levels: int = 1) -> float:
    """Traced bytes the machine allocates per ready message, at `messages` ready messages spread over
    `levels` priorities."""
    machine = QueueMachine("bench", QueueConfig(message_ttl=message_ttl))
    batch = _batch(levels)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for seq in range(messages // BATCH):
            machine.apply(EntryMeta(START_MS + seq), Enqueue(batch, "publisher", seq))
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert machine.stats().messages_ready == messages
    return used / messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each throughput run")
    parser.add_argument("--messages", type=int, default=1_000_000, help="ready messages for the memory run")
    args = parser.parse_args()
    for label, through_codec in (("apply", False), ("envelope+msgpack+decode+apply", True)):
        commands, messages = cycle_rate(args.seconds, through_codec)
        print(f"enqueue(100)+settle cycles, {label}: {commands:,.0f} commands/s, {messages:,.0f} messages/s")
    rate = enqueue_rate(args.messages)
    print(f"enqueue(100) only, queue growing to {args.messages:,}: {rate:,.0f} messages/s")
    for ttl in (None, 60_000):
        per_message = bytes_per_ready_message(args.messages, ttl)
        print(f"bytes per ready message at {args.messages:,} (message ttl {ttl}): {per_message:.1f}")
    per_message = bytes_per_ready_message(args.messages, None, levels=10)
    print(f"bytes per ready message at {args.messages:,} (10 priority levels): {per_message:.1f}")


if __name__ == "__main__":
    main()
