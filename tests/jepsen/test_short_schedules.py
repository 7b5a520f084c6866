"""The CI short form of the suite: a few ~25 s randomized schedules with every default nemesis family,
one of corruption and kills, one of power failures only and one of full disks, which must lose nothing
and dequeue nothing unexpected, with replicas that agree afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_tests.history import read_history
from jepsen_tests.report import verdict_text, write_report
from jepsen_tests.runner import RunConfig, RunResult, run

pytestmark = pytest.mark.faults

SCHEDULES = [(1, 3), (2, 5), (3, 3)]  # (seed, nodes)
POWER_SEED = 32  # on 3 nodes over 25 s it draws power random-node, all, then rolling


def run_passing(config: RunConfig) -> RunResult:
    """Run a schedule and check that it lost nothing, invented nothing, converged and really ran."""
    result = run(config, progress=print)
    write_report(result)
    text = verdict_text(result)
    assert result.verdict.lost == [], text
    assert result.verdict.unexpected == [], text
    assert result.convergence.agreed, text
    assert result.verdict.enqueue_count > 100, text  # the workload really ran
    assert len(result.verdict.exercised) == 3, text  # priorities, delayed nacks and touches among it
    assert result.schedule, text
    return result


@pytest.mark.timeout(150)
@pytest.mark.parametrize(("seed", "nodes"), SCHEDULES, ids=[f"seed{s}-n{n}" for s, n in SCHEDULES])
def test_mixed_nemesis_schedule_loses_nothing(
    netns_ready: None, tmp_path: Path, seed: int, nodes: int
) -> None:
    run_passing(RunConfig(duration=25, seed=seed, nodes=nodes, out_dir=tmp_path))


@pytest.mark.timeout(150)
def test_power_schedule_with_every_node_at_once_loses_nothing(netns_ready: None, tmp_path: Path) -> None:
    config = RunConfig(duration=25, nemeses=("power",), seed=POWER_SEED, nodes=3, out_dir=tmp_path)
    result = run_passing(config)
    logged = [json.loads(line) for line in (result.run_dir / "nemesis.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in logged if e["event"] == "start"] == ["random-node", "all", "rolling"]


@pytest.mark.timeout(150)
def test_corrupt_schedule_loses_nothing(netns_ready: None, tmp_path: Path) -> None:
    config = RunConfig(duration=30, seed=1, nodes=3, nemeses=("corrupt", "kill"), out_dir=tmp_path)
    result = run_passing(config)
    logged = [json.loads(line) for line in (result.run_dir / "nemesis.jsonl").read_text().splitlines()]
    damaged = [f for f in logged if f.get("nemesis") == "corrupt" and " at " in f.get("description", "")]
    assert damaged, logged  # at least one corrupt fault damaged a file


@pytest.mark.timeout(150)
def test_disk_schedule_refuses_publishes_only_with_resource_alarm(netns_ready: None, tmp_path: Path) -> None:
    """Disks fill (one node's, a leader's, every node's) and free again: publishers are held back by the
    disk alarm and told `resource_alarm` when their wait runs out, nothing else fails, nothing fails
    outside a fault, and publishing resumes by itself after each heal.

    A retry sent late in a publish's wait may still be on the wire when the client's deadline passes: a
    `timeout` (outcome unknown) is the same holding back, so it is allowed, but only during a fault."""
    config = RunConfig(duration=25, nemeses=("disk",), seed=1, nodes=3, out_dir=tmp_path)
    result = run_passing(config)
    logged = [json.loads(line) for line in (result.run_dir / "nemesis.jsonl").read_text().splitlines()]
    started = {e["window"]: e["time"] for e in logged if e["event"] == "start"}
    windows = [(started[e["window"]], e["time"]) for e in logged if e["event"] == "stop"]
    invoked: dict[tuple[str, int | None], float] = {}
    refused: dict[str | None, list[int | None]] = {}
    for op in read_history(result.run_dir / "history.jsonl"):
        if op.f != "enqueue":
            continue
        if op.type == "invoke":
            invoked[(op.process, op.value)] = op.time
        elif op.type != "ok":
            began = invoked[(op.process, op.value)]
            during = any(began < stop and op.time > start for start, stop in windows)
            refused.setdefault(op.error if during else f"{op.error} outside a fault", []).append(op.value)
    text = verdict_text(result)
    assert "resource_alarm" in refused, text
    assert set(refused) <= {"resource_alarm", "timeout"}, f"{refused}\n{text}"
    assert all(gap.from_heal is not None for gap in result.availability), text
