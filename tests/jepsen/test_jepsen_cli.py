"""`quorumq-jepsen`: usage, version, re-checking a run directory, refusing politely without namespaces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from jepsen_tests import runner
from jepsen_tests.cli import EXIT_INVALID, EXIT_UNAVAILABLE, main

BIN = Path(sys.executable).parent


def test_script_prints_usage_and_version() -> None:
    usage = subprocess.run(
        [BIN / "quorumq-jepsen", "run", "--help"], capture_output=True, text=True, check=True
    )
    assert "--nemesis" in usage.stdout and "--seed" in usage.stdout
    version = subprocess.run(
        [BIN / "quorumq-jepsen", "--version"], capture_output=True, text=True, check=True
    )
    assert "0.1.0" in version.stdout


def write_history(run_dir: Path, lines: list[str]) -> None:
    run_dir.mkdir()
    (run_dir / "history.jsonl").write_text("\n".join(lines) + "\n")


def test_check_accepts_a_valid_history_and_rejects_a_lost_value(tmp_path: Path) -> None:
    ok = [
        '{"process":"p","type":"invoke","f":"enqueue","value":1,"time":0}',
        '{"process":"p","type":"ok","f":"enqueue","value":1,"time":0.1}',
        '{"process":"c","type":"invoke","f":"dequeue","value":1,"time":0.2}',
        '{"process":"c","type":"ok","f":"dequeue","value":1,"time":0.3}',
    ]
    write_history(tmp_path / "good", ok)
    write_history(tmp_path / "bad", ok[:2])
    good = CliRunner().invoke(main, ["check", str(tmp_path / "good")])
    assert good.exit_code == 0 and "valid: True" in good.output
    bad = CliRunner().invoke(main, ["check", str(tmp_path / "bad")])
    assert bad.exit_code == EXIT_INVALID and "lost: 1 [1]" in bad.output


def test_unknown_nemesis_is_a_usage_error() -> None:
    answer = CliRunner().invoke(main, ["run", "--nemesis", "partition,meteor"])
    assert answer.exit_code == 2
    assert "meteor" in answer.output


def test_run_refuses_politely_where_namespaces_are_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "unavailable_reason", lambda: "the fault suite needs root")
    answer = CliRunner().invoke(main, ["run", "--time", "5", "--out", str(tmp_path)])
    assert answer.exit_code == EXIT_UNAVAILABLE
    assert "cannot run the fault suite here: the fault suite needs root" in answer.output
    assert list(tmp_path.iterdir()) == []
