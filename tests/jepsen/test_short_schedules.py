"""The CI short form of the suite: a few ~25 s randomized schedules with every default nemesis family,
one of corruption and kills, one of power failures only and one of full disks, which must lose nothing
(no copy of a value published through the fanout exchange either), dequeue nothing unexpected, hand out
each message group's values one at a time and in order, with replicas that agree afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_tests.history import read_history
from jepsen_tests.nemesis_log import read_fault_spans
from jepsen_tests.report import verdict_text, write_report
from jepsen_tests.runner import RunConfig, RunResult, run

pytestmark = pytest.mark.faults

SCHEDULES = [(1, 3), (2, 5), (3, 3)]  # (seed, nodes)
POWER_SEED = 32  # on 3 nodes over 25 s it draws power random-node, all, then rolling
DISK_SEED = 14  # on 3 nodes over 25 s it fills a leader's disk to its alarm, then every disk to the last byte
AMQP_SEED = 32  # on 3 nodes over 25 s it draws a partition, a kill, then a full disk


def run_passing(config: RunConfig) -> RunResult:
    """Run a schedule and check that it lost nothing, invented nothing, converged and really ran."""
    result = run(config, progress=print)
    write_report(result)
    text = verdict_text(result)
    assert result.verdict.lost == [], text
    assert result.verdict.unexpected == [], text
    assert result.verdict.refused_otherwise == {}, text
    assert (result.verdict.enqueued_twice, result.verdict.resend_dequeued) == ({}, {}), text
    assert result.verdict.fanout_missing == {}, text
    assert (result.verdict.group_overlap, result.verdict.group_order) == ({}, {}), text
    assert result.convergence.agreed, text
    assert result.verdict.enqueue_count > 100, text  # the workload really ran
    assert len(result.verdict.exercised) == 6, text  # priorities, delayed nacks, touches, resends, fan-out,
    # message groups
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
    """A leader's disk fills to its alarm, then every node's to the last byte, and each frees again:
    publishers are held back by the alarm and told `resource_alarm` when their wait runs out, nothing
    else fails while only the alarm holds them (the checker's rule, `disk_refusals.py`), the nodes whose
    writes failed come back by themselves, and publishing resumes after each heal."""
    config = RunConfig(duration=25, nemeses=("disk",), seed=DISK_SEED, nodes=3, out_dir=tmp_path)
    result = run_passing(config)
    text = verdict_text(result)
    kinds = [span.kind for span in read_fault_spans(result.run_dir / "nemesis.jsonl")]
    assert kinds == ["leader", "all-last-byte"], text
    refusals = [
        op.error
        for op in read_history(result.run_dir / "history.jsonl")
        if op.f == "enqueue" and op.type not in ("invoke", "ok")
    ]
    assert "resource_alarm" in refusals, text
    assert all(gap.from_heal is not None for gap in result.availability), text


@pytest.mark.timeout(150)
def test_amqp_clients_under_a_partition_a_kill_and_a_full_disk_lose_nothing(
    netns_ready: None, tmp_path: Path
) -> None:
    """The AMQP client mode: aio-pika publishers with confirms and consumers with manual acks, each on
    one node's listener, through a partition, a kill and a full disk (AMQP_SEED). Nothing an AMQP
    publisher saw confirmed is lost, the checker's other rules hold for their values as for every other
    (the disk alarm's among them: a publish held back is a `timeout`), and they really ran on both sides
    of the faults (connections broken and made again)."""
    config = RunConfig(
        duration=25,
        nemeses=("kill", "partition", "disk"),
        seed=AMQP_SEED,
        nodes=3,
        out_dir=tmp_path,
        amqp=True,
    )
    result = run_passing(config)
    text = verdict_text(result)
    ops = read_history(result.run_dir / "history.jsonl")
    faults = read_fault_spans(result.run_dir / "nemesis.jsonl")
    healed = max(span.end for span in faults if span.nemesis == "kill")
    amqp_confirmed = [op for op in ops if op.process.startswith("apub") and op.type == "ok"]
    amqp_dequeued = {op.queue for op in ops if op.process.startswith("acon") and op.type == "ok"}
    assert [op for op in amqp_confirmed if op.time < faults[0].start], text
    assert [op for op in amqp_confirmed if op.time > healed], text
    assert amqp_dequeued == {"jepsen-0", "grp"}, text
