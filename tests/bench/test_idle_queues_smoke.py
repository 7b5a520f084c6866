"""The idle-queues benchmark keeps working: 20 queues on quorumq alone (no RabbitMQ), a 2 s idle window
and the restart of a node until every queue is online on it; no figure is asserted but that each was
measured."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.idle_queues import COLUMNS, main


@pytest.mark.slow
def test_idle_queues_measures_quorumq_and_writes_its_tables(tmp_path: Path) -> None:
    results = tmp_path / "idle.md"
    argv = ["--broker", "quorumq", "--queues", "20", "--settle-seconds", "0", "--idle-seconds", "2"]
    outcome = CliRunner().invoke(main, [*argv, "--results", str(results)])
    assert outcome.exit_code == 0, outcome.output
    table = [line.split(" | ") for line in results.read_text().splitlines() if line.startswith("| quorumq")]
    assert len(table) == 1
    row = dict(zip(COLUMNS, (cell.strip("| ") for cell in table[0]), strict=True))
    assert row["queues"] == "20"
    assert float(row["declare queues/s"].replace(",", "")) > 0
    assert float(row["idle cores (3 nodes)"]) >= 0
    assert 0 < float(row["restart: healthy s"]) <= float(row["restart: all online s"])
    assert "a restarted node has every queue online" in results.read_text()
