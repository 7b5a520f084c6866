"""Synced write throughput of the RocksDB node store against a plain `os.write` + `os.fsync` loop.

`python -m bench.storage [--dir DIR] [--seconds S]`: for 1 KiB entries in batches of 1, 64 and 512,
how many synced batches (and entries) per second `NodeStore.commit(sync=True)` achieves, next to
an append-only file written and fsynced once per batch on the same disk in the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from raft_log.storage.node_store import NodeStore
from raft_log.types import ConfState, Entry, HardState

ENTRY_BYTES = 1024
BATCH_SIZES = (1, 64, 512)


def batches_per_second(write_batch: Callable[[], None], seconds: float) -> float:
    """Call `write_batch` repeatedly for about `seconds`; the calls per second."""
    count = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        write_batch()
        count += 1
    return count / (time.perf_counter() - started)


def store_rate(directory: Path, batch_size: int, seconds: float) -> float:
    """Synced commits per second of one group in a new database, `batch_size` entries per commit."""
    store = NodeStore.open(tempfile.mkdtemp(prefix="store-", dir=directory))
    group = store.create_group("bench", ConfState(voters=("n1",)))
    payload = os.urandom(ENTRY_BYTES)

    def write_batch() -> None:
        start = group.last_index() + 1
        group.append([Entry(index, 1, data=payload) for index in range(start, start + batch_size)])
        group.set_hard_state(HardState(term=1, vote="n1", commit=start + batch_size - 1))
        store.commit(sync=True)

    try:
        return batches_per_second(write_batch, seconds)
    finally:
        store.close()


def fsync_loop_rate(directory: Path, batch_size: int, seconds: float) -> float:
    """Appends of `batch_size` KiB, each followed by fsync, per second."""
    payload = os.urandom(ENTRY_BYTES * batch_size)
    fd, _ = tempfile.mkstemp(prefix="fsync-loop-", dir=directory)

    def write_batch() -> None:
        os.write(fd, payload)
        os.fsync(fd)

    try:
        return batches_per_second(write_batch, seconds)
    finally:
        os.close(fd)


def main() -> None:
    """Run the benchmark and print a table with ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=".", help="parent of the scratch directory (the disk measured)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time per batch size and writer")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (median kept)")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="bench-storage-", dir=args.dir))
    try:
        print(f"1 KiB entries, synced, in {directory.resolve()}; median of {args.rounds} alternating rounds")
        print(f"{'batch':>6} {'store batch/s':>14} {'store entry/s':>14} {'fsync batch/s':>14} {'ratio':>6}")
        for batch_size in BATCH_SIZES:
            seconds = args.seconds / args.rounds
            baselines, stores = [], []
            for _ in range(args.rounds):
                baselines.append(fsync_loop_rate(directory, batch_size, seconds))
                stores.append(store_rate(directory, batch_size, seconds))
            baseline, store = statistics.median(baselines), statistics.median(stores)
            print(
                f"{batch_size:>6} {store:>14,.0f} {store * batch_size:>14,.0f} {baseline:>14,.0f}"
                f" {store / baseline:>6.2f}"
            )
    finally:
        shutil.rmtree(directory)


if __name__ == "__main__":
    main()
