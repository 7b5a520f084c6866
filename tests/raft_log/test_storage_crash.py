"""Acknowledged entries survive SIGKILL: a real child process is killed at random moments, many times.

Rounds: 20 by default (`QUORUMQ_STORAGE_CRASH_ROUNDS` for more), 200 in the `slow` variant.
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from raft_log.storage.node_store import NodeStore

CHILD_PATH = Path(__file__).with_name("crash_child.py")
GROUPS = 4
BATCH_SIZE = 8


def load_child():
    spec = importlib.util.spec_from_file_location("crash_child", CHILD_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


child = load_child()


def run_child_until_killed(db_path: Path, rng: random.Random) -> int:
    """Start the child, kill it after a random number of acknowledgements; the last index it acknowledged."""
    process = subprocess.Popen(
        [sys.executable, str(CHILD_PATH), str(db_path), str(GROUPS), str(BATCH_SIZE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    acknowledged = 0
    try:
        for _ in range(rng.randint(1, 12)):
            line = process.stdout.readline()
            if not line:
                pytest.fail(f"child exited before being killed: {process.stderr.read().decode()}")
            acknowledged = int(line.split()[1])
        time.sleep(rng.uniform(0, 0.02))  # lands the kill at a random point of a later batch
    finally:
        process.send_signal(signal.SIGKILL)
        remaining = process.stdout.read()
        process.wait()
        process.stderr.close()
    complete_lines = remaining.split(b"\n")[:-1]  # a line cut short by the kill was not acknowledged
    return max([acknowledged, *(int(line.split()[1]) for line in complete_lines)])


def run_crash_rounds(db_path: Path, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    acknowledged = 0
    for round_number in range(rounds):
        acknowledged = max(acknowledged, run_child_until_killed(db_path, rng))
        store = NodeStore.open(db_path)
        try:
            assert store.group_ids() == sorted(child.group_id(n) for n in range(GROUPS))
            lasts = set()
            for gid in store.group_ids():
                group = store.group(gid)
                child.check_group(group, acknowledged)
                lasts.add(group.last_index())
            assert len(lasts) == 1, f"round {round_number}: one commit covers every group, got {lasts}"
        finally:
            store.close()
    assert acknowledged > 0


def test_every_acknowledged_entry_survives_sigkill(tmp_path):
    rounds = int(os.environ.get("QUORUMQ_STORAGE_CRASH_ROUNDS", "20"))
    run_crash_rounds(tmp_path / "node.db", rounds, seed=rounds)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_acknowledged_entry_survives_sigkill_many_rounds(tmp_path):
    run_crash_rounds(tmp_path / "node.db", rounds=200, seed=7)
