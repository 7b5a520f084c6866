"""A run's report directory: verdict as JSON and text, and the timeline PNG (next to history and log)."""

from __future__ import annotations

import json
from dataclasses import asdict

from jepsen_tests.history import read_history
from jepsen_tests.nemesis_log import read_fault_spans
from jepsen_tests.runner import RunResult, config_record


def verdict_text(result: RunResult) -> str:
    """The human-readable verdict: run parameters, the checker's sets, replica agreement, faults."""
    config = result.config
    lines = [
        f"{'PASS' if result.passed else 'FAIL'}  seed {config.seed}, {config.nodes} nodes, "
        f"{config.duration:.0f} s, nemeses {','.join(config.nemeses)}, queues {','.join(result.queues)}",
        "",
        "total-queue checker:",
        result.verdict.summary(),
        "",
        f"replicas agree: {result.convergence.agreed}",
        *result.convergence.disagreements(),
        f"left after drain: {result.drain_left}",
        f"expired early: {result.expired}",
        "",
        f"faults ({len(result.schedule)}):",
    ]
    for gap in result.availability:
        span = gap.fault
        lines.append(f"  {span.start:6.1f}-{span.end:6.1f}s {span.nemesis} {span.kind}: {span.description}")
        lines.append(f"  {'':14}{gap.summary()}")
    lines += ["", f"command: {result.provenance.command}", f"commit: {_commit(result)}"]
    return "\n".join(lines)


def write_report(result: RunResult) -> None:
    """Write verdict.json, verdict.txt and timeline.png into the run directory."""
    run_dir = result.run_dir
    verdict = {
        "passed": result.passed,
        "command": result.provenance.command,
        "commit": result.provenance.commit,
        "dirty": result.provenance.dirty,
        "config": config_record(result.config),
        "queues": list(result.queues),
        "schedule": [asdict(w) for w in result.schedule],
        "checker": result.verdict.to_dict(),
        "replicas_agree": result.convergence.agreed,
        "replicas": result.convergence.replicas,
        "left_after_drain": result.drain_left,
        "availability": [gap.to_dict() for gap in result.availability],
        "expired_early": result.expired,
    }
    (run_dir / "verdict.json").write_text(json.dumps(verdict, indent=2) + "\n", encoding="utf-8")
    (run_dir / "verdict.txt").write_text(verdict_text(result) + "\n", encoding="utf-8")
    title = (
        f"quorumq jepsen: seed {result.config.seed}, {result.config.nodes} nodes, "
        f"{'PASS' if result.passed else 'FAIL'} (lost {len(result.verdict.lost)}, "
        f"unexpected {len(result.verdict.unexpected)}, duplicated {len(result.verdict.duplicated)}, "
        f"recovered {len(result.verdict.recovered)})"
    )
    from jepsen_tests.plot import plot_timeline  # matplotlib loads only to draw, not for the CLI's usage

    plot_timeline(
        read_history(run_dir / "history.jsonl"),
        read_fault_spans(run_dir / "nemesis.jsonl"),
        run_dir / "timeline.png",
        title,
    )


def _commit(result: RunResult) -> str:
    commit = result.provenance.commit or "unknown (not a git checkout)"
    return f"{commit} (with uncommitted changes)" if result.provenance.dirty else commit
