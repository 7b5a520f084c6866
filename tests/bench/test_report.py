"""Rules of the benchmark report: percentiles and rewriting only the generated part of the doc."""

from __future__ import annotations

import math
from pathlib import Path

from bench.latency import latency_ms, percentile
from bench.report import RESULTS_BEGIN, RESULTS_END, write_results


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
