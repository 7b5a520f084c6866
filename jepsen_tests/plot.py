"""The run's timeline as a PNG: throughput and publish latency over time, fault windows shaded, and the
publish gaps (jepsen_tests.availability) drawn as bars from each fault's start and heal to the next
confirm."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from jepsen_tests.availability import publish_gaps, publish_latencies
from jepsen_tests.history import Op
from jepsen_tests.nemesis_log import FaultSpan

COLOURS = {
    "partition": "tab:red",
    "kill": "tab:purple",
    "pause": "tab:orange",
    "netem": "tab:olive",
    "corrupt": "tab:brown",
    "clock": "tab:cyan",
    "client": "tab:pink",
    "power": "gold",
}
SERIES = (
    ("enqueue", "ok", "enqueue ok", "tab:blue"),
    ("enqueue", "info", "enqueue info", "tab:orange"),
    ("enqueue", "fail", "enqueue fail", "tab:red"),
    ("dequeue", "ok", "dequeue ok", "tab:green"),
)


def plot_timeline(history: Sequence[Op], faults: Sequence[FaultSpan], path: Path, title: str) -> None:
    """Draw operations per second by kind and publish latency, with every fault window shaded and its
    publish gaps drawn near the top of the latency panel (solid from the start, thin from the heal)."""
    figure = Figure(figsize=(13, 7), layout="tight")
    rates, latency = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    end = max((op.time for op in history), default=1.0)
    seconds = range(int(end) + 1)
    for f, type_, label, colour in SERIES:
        counts = Counter(int(op.time) for op in history if op.f == f and op.type == type_)
        rates.plot(seconds, [counts.get(s, 0) for s in seconds], label=label, color=colour, linewidth=1.2)
    rates.set_ylabel("operations / s")
    rates.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    by_type: dict[str, list[tuple[float, float]]] = {}
    for start, seconds_taken, type_ in publish_latencies(history):
        by_type.setdefault(type_, []).append((start, seconds_taken * 1000))
    for type_, points in sorted(by_type.items()):
        colour = next(c for f, t, _, c in SERIES if f == "enqueue" and t == type_)
        latency.scatter(*zip(*points, strict=True), s=4, color=colour, label=f"publish {type_}", alpha=0.6)
    latency.set_yscale("log")
    latency.set_ylabel("publish latency (ms)")
    latency.set_xlabel("seconds since the workload started")
    latency.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    for gap in publish_gaps(history, faults):
        fault = gap.fault
        colour = COLOURS.get(fault.nemesis, "tab:gray")
        for axes in (rates, latency):
            axes.axvspan(fault.start, fault.end, color=colour, alpha=0.15, linewidth=0)
        rates.annotate(
            f"{fault.nemesis}\n{fault.kind}",
            xy=(fault.start, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(2, -2),
            textcoords="offset points",
            fontsize=7,
            va="top",
            color=colour,
        )
        _draw_gap(latency, fault.start, gap.from_start, 0.95, 4, colour)
        _draw_gap(latency, fault.end, gap.from_heal, 0.88, 2, colour)
    rates.set_title(title, fontsize=10)
    figure.savefig(path, dpi=100)


def _draw_gap(axes: Axes, since: float, gap: float | None, height: float, width: float, colour: str) -> None:
    """A bar at `height` (axes fraction) from `since` to the next confirm, labelled with its length."""
    if gap is None:
        return
    where = axes.get_xaxis_transform()
    axes.hlines(height, since, since + gap, transform=where, colors=colour, linewidth=width)
    axes.annotate(
        f"{gap:.1f}s",
        xy=(since + gap, height),
        xycoords=where,
        xytext=(2, 0),
        textcoords="offset points",
        fontsize=6,
        va="center",
        color=colour,
    )
