"""The comparison table: rich for the terminal, Markdown for docs/benchmarks.md."""

from __future__ import annotations

import math
import re
from pathlib import Path

from rich.table import Table

from bench.suite import BrokerRun, Measurement

RESULTS_BEGIN = "<!-- bench/compare.py results: begin -->"
RESULTS_END = "<!-- bench/compare.py results: end -->"
COLUMNS = (
    "workload",
    "broker (client)",
    "msg/s",
    "server CPU µs/msg",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "CPU s per node",
    "peak RSS MiB per node",
    "client CPU s",
    "quorumq / RabbitMQ's fastest",
)

BACKLOG_COLUMNS = (
    "broker",
    "N messages x body",
    "fill s",
    "bytes/msg home node",
    "bytes/msg all nodes",
    "restart s",
    "RSS MiB per node: before -> after fill (its peak), peak in restart, serving",
)


def _number(value: float, digits: int = 0) -> str:
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


def cpu_per_message_us(measurement: Measurement) -> float:
    """The broker nodes' CPU (all of them, during the measured part) per message completed, in µs; NaN
    when none completed. Steadier than msg/s on a shared machine."""
    if measurement.result.messages == 0:
        return math.nan
    cpu_seconds = sum(usage.cpu_seconds for usage in measurement.usage.values())
    return cpu_seconds * 1e6 / measurement.result.messages


def _ratio(ours: Measurement, anchor: tuple[str, Measurement] | None) -> str:
    """Throughput ratio against the anchor (RabbitMQ's fastest client on this workload), the p99 ratio
    where both have latencies, and the server CPU per message ratio where both used some."""
    if anchor is None or anchor[1].result.rate == 0:
        return ""
    client, theirs = anchor
    text = f"msg/s x{ours.result.rate / theirs.result.rate:.2f}"
    if ours.result.has_latencies and theirs.result.has_latencies:
        text += f", p99 x{ours.result.latency_ms()['p99'] / theirs.result.latency_ms()['p99']:.2f}"
    ours_cpu, theirs_cpu = cpu_per_message_us(ours), cpu_per_message_us(theirs)
    if ours_cpu > 0 and theirs_cpu > 0:  # NaN compares false
        text += f", CPU/msg x{ours_cpu / theirs_cpu:.2f}"
    return f"{text} (vs {client})"


def rows(runs: list[BrokerRun]) -> list[list[str]]:
    """One row per workload, broker and client, in workload order; quorumq rows carry the ratio to
    the strongest anchor: the RabbitMQ client that was fastest on that workload in this run."""
    by_key: dict[str, list[tuple[BrokerRun, Measurement]]] = {}
    for run in runs:
        for measurement in run.measurements:
            by_key.setdefault(measurement.key, []).append((run, measurement))
    table = []
    for measured in by_key.values():
        anchors = [(run.client, m) for run, m in measured if run.broker == "RabbitMQ"]
        anchor = max(anchors, key=lambda pair: pair[1].result.rate, default=None)
        for run, measurement in measured:
            latency = measurement.result.latency_ms()
            usage = measurement.usage.values()
            table.append(
                [
                    measurement.label,
                    f"{run.broker} ({run.client})",
                    _number(measurement.result.rate),
                    _number(cpu_per_message_us(measurement)),
                    _number(latency["p50"], 1),
                    _number(latency["p99"], 1),
                    _number(latency["p999"], 1),
                    " / ".join(f"{u.cpu_seconds:.1f}" for u in usage),
                    " / ".join(f"{u.peak_rss_bytes / 2**20:.0f}" for u in usage),
                    f"{measurement.client_cpu_seconds:.1f}",
                    _ratio(measurement, anchor) if run.broker == "quorumq" else "",
                ]
            )
    return table


def rich_table(runs: list[BrokerRun]) -> Table:
    """The comparison as a rich Table."""
    table = Table(title="quorumq vs RabbitMQ quorum queues (3 nodes each, one machine)")
    for column in COLUMNS:
        table.add_column(column, justify="right" if column not in COLUMNS[:2] else "left")
    for row in rows(runs):
        table.add_row(*row)
    return table


def backlog_rows(runs: list[BrokerRun]) -> list[list[str]]:
    """One row per broker that ran the backlog measurement."""
    table = []
    for run in runs:
        if run.backlog is not None:
            b = run.backlog
            table.append(
                [
                    run.broker,
                    f"{b.messages:,} x {b.body_size} B",
                    f"{b.fill_seconds:,.0f}",
                    f"{b.home_bytes_per_message:,.0f}",
                    f"{b.cluster_bytes_per_message:,.0f}",
                    f"{b.restart_seconds:.1f}",
                    b.rss_summary(),
                ]
            )
    return table


def backlog_table(runs: list[BrokerRun]) -> Table:
    """Memory per queued message and restart time as a rich Table."""
    table = Table(title="backlog: memory per queued message, restart to serving")
    for column in BACKLOG_COLUMNS:
        table.add_column(column)
    for row in backlog_rows(runs):
        table.add_row(*row)
    return table


def markdown(runs: list[BrokerRun], machine: dict[str, str], command: str) -> str:
    """The results section of docs/benchmarks.md: command, machine, clients, table, backlog figures."""
    lines = [
        "## Results (generated by bench/compare.py)",
        "",
        "Command:",
        "",
        f"    {command}",
        "",
        "Machine:",
        "",
    ]
    lines += [f"- {label}: {value}" for label, value in machine.items()]
    lines += ["", "Clients:", ""]
    lines += [f"- {run.broker} ({run.client}): {run.description}" for run in runs]
    lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows(runs)]
    backlog = backlog_rows(runs)
    if backlog:
        lines += [
            "",
            "Backlog: one queue filled with N messages; RSS growth per message on the queue's home node",
            "and summed over all three nodes; then the home node is stopped and started again, timed until",
            "a request to it alone reports the whole backlog (the new leader may answer through it). Each",
            "node's RSS is sampled every 0.1 s through the fill and from the restart until the node serves.",
            "",
            "| " + " | ".join(BACKLOG_COLUMNS) + " |",
            "|" + "---|" * len(BACKLOG_COLUMNS),
        ]
        lines += ["| " + " | ".join(row) + " |" for row in backlog]
    return "\n".join(lines) + "\n"


def write_results(doc: Path, section: str) -> None:
    """Put `section` between the results markers of `doc`, keeping the hand-written text around it."""
    block = f"{RESULTS_BEGIN}\n{section}{RESULTS_END}"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\n"
    pattern = re.compile(re.escape(RESULTS_BEGIN) + ".*?" + re.escape(RESULTS_END), re.DOTALL)
    text = (
        pattern.sub(lambda _: block, text)
        if pattern.search(text)
        else text.rstrip("\n") + "\n\n" + block + "\n"
    )
    doc.write_text(text)
