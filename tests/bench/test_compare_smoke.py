"""The comparison harness keeps working: every workload runs ~1 s against a real quorumq cluster through
both of its clients (our Python client, wrk over the JSON contract); no figure is asserted.

tests/bench/test_java_anchor.py runs RabbitMQ's side through its Java client."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.report import RESULTS_BEGIN, RESULTS_END, markdown, rows, write_results
from bench.suite import Options, run_broker, workloads

SMOKE = Options(
    duration=1.0,
    publishers=2,
    in_flight=200,
    single_publishers=6,
    consume_count=500,
    rate=200.0,
    queues=3,
    backlog=2000,
    clients=("quorumq:python", "quorumq:wrk"),
)


@pytest.mark.slow
def test_every_workload_and_the_backlog_run_against_quorumq_and_reach_the_doc(tmp_path: Path) -> None:
    python, wrk = run_broker("quorumq", SMOKE, tmp_path / "cluster")
    assert (python.client, wrk.client) == ("Python client", "wrk, JSON")
    assert [m.key for m in python.measurements] == [shape.key for shape in workloads(SMOKE)]
    assert [m.key for m in wrk.measurements] == ["s-1k"]  # wrk only sends one-message publishes
    for measurement in (*python.measurements, *wrk.measurements):
        assert measurement.result.messages > 0, measurement.key
        assert set(measurement.usage) == {"node1", "node2", "node3"}
    by_key = {m.key: m for m in python.measurements}
    assert by_key["b-100"].result.messages == SMOKE.consume_count
    assert by_key["b16-1000"].result.messages == SMOKE.consume_count
    for key in ("a-1k", "s-1k", "c", "d"):
        assert len(by_key[key].result.latencies) == by_key[key].result.messages
    wrk_latency = wrk.measurements[0].result.latency_ms()
    assert 0 < wrk_latency["p50"] <= wrk_latency["p99"] <= wrk_latency["p999"]
    assert python.backlog is not None and python.backlog.restart_seconds > 0
    assert wrk.backlog is None  # measured once per broker
    doc = tmp_path / "benchmarks.md"
    write_results(doc, markdown([python, wrk], {"CPU": "test"}, "python -m bench.compare"))
    text = doc.read_text()
    assert text.count(RESULTS_BEGIN) == 1 and text.count(RESULTS_END) == 1
    assert "quorumq (wrk, JSON)" in text
    assert len(rows([python, wrk])) == len(python.measurements) + 1
