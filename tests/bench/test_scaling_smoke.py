"""The scaling benchmark keeps working: workload (d) runs ~1 s on each configuration, its node processes
pinned by taskset; no figure is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.scaling import RUNS, main


@pytest.mark.slow
def test_scaling_runs_every_configuration_and_writes_its_table(tmp_path: Path) -> None:
    results = tmp_path / "scaling.md"
    outcome = CliRunner().invoke(main, ["--duration", "1", "--queues", "3", "--results", str(results)])
    assert outcome.exit_code == 0, outcome.output
    rows = [line.split("|")[1:-1] for line in results.read_text().splitlines() if line.startswith("| ")]
    assert [(int(r[0]), int(r[1])) for r in rows[1:]] == list(RUNS)  # after the header row
    assert all(float(r[2].replace(",", "")) > 0 for r in rows[1:])
