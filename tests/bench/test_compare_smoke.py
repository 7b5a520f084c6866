"""The comparison harness keeps working: every workload runs ~1 s against a real quorumq cluster.

RabbitMQ is not installed in CI, so only the quorumq side runs here; no figure is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.report import RESULTS_BEGIN, RESULTS_END, markdown, rows, write_results
from bench.suite import Options, run_broker, workloads

SMOKE = Options(
    duration=1.0, publishers=2, in_flight=200, consume_count=500, rate=200.0, queues=3, backlog=2000
)


@pytest.mark.slow
def test_every_workload_and_the_backlog_run_against_quorumq_and_reach_the_doc(tmp_path: Path) -> None:
    run = run_broker("quorumq", SMOKE, tmp_path / "cluster")
    assert [m.key for m in run.measurements] == [shape.key for shape in workloads(SMOKE)]
    for measurement in run.measurements:
        assert measurement.result.messages > 0, measurement.key
        assert set(measurement.usage) == {"node1", "node2", "node3"}
    by_key = {m.key: m for m in run.measurements}
    assert by_key["b-100"].result.messages == SMOKE.consume_count
    for key in ("a-1k", "c", "d"):
        assert len(by_key[key].result.latencies) == by_key[key].result.messages
    assert run.backlog is not None and run.backlog.restart_seconds > 0
    doc = tmp_path / "benchmarks.md"
    write_results(doc, markdown([run], {"CPU": "test"}, "python -m bench.compare"))
    text = doc.read_text()
    assert text.count(RESULTS_BEGIN) == 1 and text.count(RESULTS_END) == 1
    assert len(rows([run])) == len(run.measurements)
