"""Rules of the benchmark report: percentiles and rewriting only the generated part of the doc."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench.latency import latency_ms, percentile
from bench.report import COLUMNS, RESULTS_BEGIN, RESULTS_END, cpu_per_message_us, rows, write_results
from bench.resources import NodeUsage
from bench.suite import BrokerRun, Measurement
from bench.workloads import WorkloadResult


def test_percentile_is_nearest_rank() -> None:
    samples = [float(i) for i in range(1, 1001)]
    assert percentile(samples, 50) == 500.0
    assert percentile(samples, 99) == 990.0
    assert percentile(samples, 99.9) == 999.0
    assert math.isnan(percentile([], 50))


def test_latency_ms_reports_p50_p99_p999_in_milliseconds() -> None:
    assert latency_ms([0.001] * 10) == {"p50": 1.0, "p99": 1.0, "p999": 1.0}


def test_results_are_replaced_between_markers_and_hand_written_text_is_kept(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nfindings before\n")
    write_results(doc, "first run\n")
    doc.write_text(doc.read_text() + "\nfindings after\n")
    write_results(doc, "second run\n")
    text = doc.read_text()
    assert "findings before" in text and "findings after" in text
    assert "second run" in text and "first run" not in text
    assert text.count(RESULTS_BEGIN) == 1 and text.count(RESULTS_END) == 1


def test_rule_each_row_reports_server_cpu_per_message_and_quorumq_its_ratio_to_the_anchor() -> None:
    """The standards ask for server CPU per message beside msg/s: steadier than throughput on a shared
    machine. It counts every broker node's CPU during the measured part."""

    def run(broker: str, messages: int, cpu_per_node: float) -> BrokerRun:
        usage = {f"node{i}": NodeUsage(cpu_per_node, 0) for i in (1, 2, 3)}
        measurement = Measurement("a-1k", "(a)", WorkloadResult(messages, 1.0), usage, 0.0)
        return BrokerRun(broker, "client", "", [measurement], None)

    ours, theirs = run("quorumq", 3000, 0.1), run("RabbitMQ", 1000, 0.2)
    assert cpu_per_message_us(ours.measurements[0]) == pytest.approx(100.0)  # 0.3 s, 3000 messages
    assert cpu_per_message_us(theirs.measurements[0]) == pytest.approx(600.0)
    assert math.isnan(cpu_per_message_us(run("quorumq", 0, 0.1).measurements[0]))
    quorumq_row, rabbit_row = rows([ours, theirs])
    assert quorumq_row[COLUMNS.index("server CPU µs/msg")] == "100"
    assert quorumq_row[-1] == "msg/s x3.00, CPU/msg x0.17 (vs client)"
    assert rabbit_row[COLUMNS.index("server CPU µs/msg")] == "600"
