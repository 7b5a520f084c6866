"""The Spark source benchmark keeps working: a small backlog drained in three micro-batches by the
quorumq source and by the in-memory floor source; no figure is asserted but that every row arrived."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_spark_benchmark_drains_the_backlog_through_both_sources() -> None:
    argv = ["--messages", "3000", "--per-trigger", "1000", "--partition-size", "500"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "client")])}
    done = subprocess.run(
        [sys.executable, "-m", "bench.spark_source", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert any(line.startswith("quorumq: 3,000 rows in 3 micro-batches") for line in lines), done.stdout
    assert "  messages left in the queue: 0" in lines, done.stdout
    assert any(line.startswith("floor (the same rows made in memory): 3,000 rows in 3") for line in lines)
    assert any("server CPU" in line for line in lines)
