"""The large-bodies benchmark keeps working: a few 1 MiB bodies on quorumq, consumed with two prefetches;
no figure is asserted but that each was measured and every message came back once."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.large_bodies import COLUMNS, main


@pytest.mark.slow
def test_large_bodies_fills_and_consumes_with_each_prefetch_and_writes_its_table(tmp_path: Path) -> None:
    results = tmp_path / "large.md"
    argv = ["--messages", "6", "--body-mib", "1", "--prefetch", "1", "--prefetch", "4"]
    outcome = CliRunner().invoke(main, [*argv, "--results", str(results)])
    assert outcome.exit_code == 0, outcome.output
    table = [
        line.split(" | ")
        for line in results.read_text().splitlines()
        if line.startswith("| ") and "x 1 MiB" in line
    ]
    rows = [dict(zip(COLUMNS, (cell.strip("| ") for cell in row), strict=True)) for row in table]
    assert [row["prefetch"] for row in rows] == ["1", "4"]
    for row in rows:
        assert row["leader"] == "node1"
        assert float(row["consume s"]) > 0
        assert row["redeliveries"] == "0"
