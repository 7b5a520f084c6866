"""The CI short form of the suite: a few ~25 s randomized schedules with every nemesis family, which must
lose nothing and dequeue nothing unexpected, with replicas that agree afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_tests.report import verdict_text, write_report
from jepsen_tests.runner import RunConfig, run

pytestmark = pytest.mark.faults

SCHEDULES = [(1, 3), (2, 5), (3, 3)]  # (seed, nodes)


@pytest.mark.timeout(150)
@pytest.mark.parametrize(("seed", "nodes"), SCHEDULES, ids=[f"seed{s}-n{n}" for s, n in SCHEDULES])
def test_mixed_nemesis_schedule_loses_nothing(
    netns_ready: None, tmp_path: Path, seed: int, nodes: int
) -> None:
    result = run(RunConfig(duration=25, seed=seed, nodes=nodes, out_dir=tmp_path), progress=print)
    write_report(result)
    text = verdict_text(result)
    assert result.verdict.lost == [], text
    assert result.verdict.unexpected == [], text
    assert result.convergence.agreed, text
    assert result.verdict.enqueue_count > 100, text  # the workload really ran
    assert result.schedule, text


@pytest.mark.timeout(150)
def test_corrupt_schedule_loses_nothing(netns_ready: None, tmp_path: Path) -> None:
    config = RunConfig(duration=30, seed=1, nodes=3, nemeses=("corrupt", "kill"), out_dir=tmp_path)
    result = run(config, progress=print)
    write_report(result)
    text = verdict_text(result)
    assert result.verdict.lost == [], text
    assert result.verdict.unexpected == [], text
    assert result.convergence.agreed, text
    assert result.verdict.enqueue_count > 100, text
    logged = [json.loads(line) for line in (result.run_dir / "nemesis.jsonl").read_text().splitlines()]
    damaged = [f for f in logged if f.get("nemesis") == "corrupt" and " at " in f.get("description", "")]
    assert damaged, logged  # at least one corrupt fault damaged a file
