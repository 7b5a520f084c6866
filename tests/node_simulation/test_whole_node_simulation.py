"""The whole-node simulation (docs/decisions/0017): real nodes, clients and faults on one seed.

`NODE_SIM_SEEDS` (default 240) and `NODE_SIM_SECONDS` (virtual seconds of faults per seed, default 10)
size the random run; a failure names its seed, and `python -m node_simulation --first-seed S --seeds 1
--seconds N` replays it. Seeds run in subprocesses with a fixed hash seed (the runner's own rule).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from node_simulation.simulation import Faults, NodeSimulation, quiet_logs

ROOT = Path(__file__).resolve().parents[2]
SEEDS = int(os.environ.get("NODE_SIM_SEEDS", "240"))
SECONDS = float(os.environ.get("NODE_SIM_SECONDS", "10"))
BATCHES = 8


def _run(first: int, seeds: int, seconds: float) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "node_simulation", "--first-seed", str(first), "--seeds", str(seeds)]
    return subprocess.run(
        [*command, "--seconds", str(seconds)],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )


@pytest.mark.parametrize("batch", range(BATCHES))
def test_whole_nodes_under_faults_keep_every_promise(batch: int) -> None:
    per_batch = SEEDS // BATCHES
    run = _run(batch * per_batch, per_batch, SECONDS)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]


def test_a_seed_replays_exactly() -> None:
    """A seed delivers the same frames at the same virtual times (the digest its line ends with) when
    run alone and when run after another seed in the same process."""
    after_another, alone = _run(3, 2, 5.0), _run(4, 1, 5.0)
    assert after_another.returncode == alone.returncode == 0, after_another.stdout + alone.stdout
    line = alone.stdout.splitlines()[0]
    assert line.startswith("seed 4: ok (") and line in after_another.stdout.splitlines()


def test_faults_of_every_kind_happen() -> None:
    """The run is as hostile as it claims: crashes, power losses, partitions, broken links, restarts,
    forwarded publishes, membership changes and metadata between them."""
    quiet_logs()
    sim = NodeSimulation(11, faults=Faults(mean_gap_s=0.2))
    stats = sim.run(20.0)
    clients = sim.clients.stats
    assert stats.crashes and stats.power_losses and stats.partitions and stats.broken_links
    assert stats.confirmed > 100 and stats.delivered > 100
    assert clients.forwarded and clients.members_added and clients.members_removed
    assert clients.filler_bytes > 2 << 20  # more metadata than one apply round
