"""The timeline: publish latencies pair each invoke with its completion; the PNG is written."""

from __future__ import annotations

from pathlib import Path

from jepsen_tests.availability import publish_latencies
from jepsen_tests.history import Op
from jepsen_tests.nemesis_log import FaultSpan, NemesisLog, read_fault_spans
from jepsen_tests.plot import plot_timeline


def test_publish_latency_is_the_time_from_invoke_to_completion_per_process_and_value() -> None:
    history = [
        Op("p0", "invoke", "enqueue", 1, 0.0),
        Op("p1", "invoke", "enqueue", 2, 0.5),
        Op("p1", "info", "enqueue", 2, 5.5),
        Op("p0", "ok", "enqueue", 1, 0.25),
        Op("c0", "ok", "dequeue", 1, 6.0),
    ]
    assert publish_latencies(history) == [(0.5, 5.0, "info"), (0.0, 0.25, "ok")]


def test_nemesis_log_pairs_starts_and_stops_into_spans(tmp_path: Path) -> None:
    times = iter([1.0, 4.0, 6.0, 9.0])
    log = NemesisLog(tmp_path / "nemesis.jsonl", lambda: next(times))
    log.write("start", window=0, nemesis="kill", kind="all", nodes=["node1"], description="SIGKILL node1")
    log.write("stop", window=0)
    log.write("start", window=1, nemesis="pause", kind="leader", nodes=["node2"], description="SIGSTOP node2")
    log.write("heal-all")
    assert read_fault_spans(tmp_path / "nemesis.jsonl") == [
        FaultSpan(1.0, 4.0, "kill", "all", "SIGKILL node1"),
        FaultSpan(6.0, 9.0, "pause", "leader", "SIGSTOP node2"),
    ]


def test_timeline_png_is_written(tmp_path: Path) -> None:
    history = [Op("p0", "invoke", "enqueue", v, v / 10) for v in range(30)]
    history += [Op("p0", "ok", "enqueue", v, v / 10 + 0.01) for v in range(30)]
    history += [Op("c0", "ok", "dequeue", v, v / 10 + 0.5) for v in range(30)]
    path = tmp_path / "timeline.png"
    plot_timeline(history, [FaultSpan(1.0, 2.0, "partition", "bridge", "a <- b -> c")], path, "test")
    assert path.read_bytes().startswith(b"\x89PNG")
