"""Entries committed per second by the pure Raft core: 3 nodes, in-memory storage, perfect network.

Messages go through the msgpack wire format; nothing sleeps or touches a disk, so this is the
core's own CPU cost per entry (the ceiling the node runtime can reach on one core).

    python -m bench.raft_core [--entries 20000] [--payload 64]
"""

from __future__ import annotations

import argparse
import random
import time

from raft_log.core import Config, RaftNode
from raft_log.messages import Message, decode_message, encode_message
from raft_log.ready import persist_ready
from raft_log.storage.memory_storage import MemoryStorage
from raft_log.types import ConfState

BATCH_SIZES = (1, 64, 1024)


class Cluster:
    """Three nodes driven in lockstep: persist, send, apply, advance."""

    def __init__(self) -> None:
        conf = ConfState(voters=("n1", "n2", "n3"))
        self.storages = {n: MemoryStorage(conf) for n in conf.voters}
        self.nodes = {
            n: RaftNode(
                Config(n, "bench", max_size_per_msg=1 << 20, max_inflight_msgs=256),
                self.storages[n],
                random.Random(i),
            )
            for i, n in enumerate(conf.voters)
        }
        self.applied = 0

    def settle(self) -> None:
        """Run Ready cycles and deliver messages until nothing is left to do."""
        queued: list[Message] = []
        while True:
            for node_id, node in self.nodes.items():
                while node.has_ready():
                    rd = node.ready()
                    persist_ready(self.storages[node_id], rd)
                    queued.extend(rd.messages)
                    if node.is_leader and rd.committed_entries:
                        self.applied = rd.committed_entries[-1].index
                    node.advance(rd)
            if not queued:
                return
            batch, queued = queued, []
            for msg in batch:
                self.nodes[msg.to].step(decode_message(encode_message(msg)))


def committed_per_second(batch: int, entries: int, payload: int) -> float:
    """Propose `entries` in batches of `batch` and wait for each batch to commit on the leader."""
    cluster = Cluster()
    leader = cluster.nodes["n1"]
    leader.campaign()
    cluster.settle()
    data = bytes(payload)
    start = time.perf_counter()
    for _ in range(entries // batch):
        for _ in range(batch):
            last = leader.propose(data)
        cluster.settle()
        assert cluster.applied >= last
    return entries / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=20_480)
    parser.add_argument("--payload", type=int, default=64, help="bytes per entry")
    args = parser.parse_args()
    print(f"3 nodes, {args.payload}-byte entries, {args.entries} entries per run")
    for batch in BATCH_SIZES:
        rate = committed_per_second(batch, args.entries, args.payload)
        print(f"batch {batch:>5}: {rate:>10,.0f} entries committed/s")


if __name__ == "__main__":
    main()
