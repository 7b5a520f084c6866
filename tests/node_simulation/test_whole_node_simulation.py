"""The whole-node simulation (docs/decisions/0017): real nodes, clients and faults on one seed.

`NODE_SIM_SEEDS` (default 1000) and `NODE_SIM_SECONDS` (virtual seconds of faults per seed, default 10)
size the random run; a failure names its seed, and `python -m node_simulation --first-seed S --seeds 1
--seconds N` replays it. Seeds run in subprocesses with a fixed hash seed (the runner's own rule).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from node_simulation.simulation import NodeSimulation, quiet_logs

ROOT = Path(__file__).resolve().parents[2]
SEEDS = int(os.environ.get("NODE_SIM_SEEDS", "1000"))
SECONDS = float(os.environ.get("NODE_SIM_SECONDS", "10"))
BATCHES = 10


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
    """The runs are as hostile as they claim: crashes, power losses, partitions, broken links, restarts,
    forwarded publishes, membership changes and metadata between them, with work still done."""
    quiet_logs()
    sims = [NodeSimulation(seed) for seed in (11, 12, 13)]
    stats = [sim.run(30.0) for sim in sims]
    clients = [sim.clients.stats for sim in sims]
    for kind in ("crashes", "power_losses", "partitions", "broken_links", "restarts"):
        assert sum(getattr(s, kind) for s in stats), kind
    assert sum(s.confirmed for s in stats) > 500 and sum(s.delivered for s in stats) > 500
    for kind in ("forwarded", "members_added", "members_removed", "leaders_moved", "abandoned_consumers"):
        assert sum(getattr(c, kind) for c in clients), kind
    assert max(c.filler_bytes for c in clients) > 2 << 20  # more metadata than one apply round
