"""The CI short form of the suite: a few ~25 s randomized schedules with every nemesis family, which must
lose nothing and dequeue nothing unexpected, with replicas that agree afterwards."""

from __future__ import annotations

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
