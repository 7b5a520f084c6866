"""`quorumq-jepsen`: usage, version, re-checking a run directory, refusing politely without namespaces."""

from __future__ import annotations

import re
import signal
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


@pytest.mark.parametrize("arguments", [["--help"], ["run", "--help"], ["check", "--help"]])
def test_usage_does_not_import_matplotlib(arguments: list[str]) -> None:
    """matplotlib is only for drawing a run's timeline: asking for usage must not load it."""
    usage = subprocess.run(
        [BIN / "quorumq-jepsen", *arguments],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    )
    assert "Usage:" in usage.stdout
    assert "| jepsen_tests.cli" in usage.stderr  # the import log is there to read
    assert "matplotlib" not in usage.stderr


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


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line contains `text`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


FAULT_LINE = re.compile(r"^\s+\d+\.\ds ")  # a nemesis line of the schedule, e.g. "   4.6s kill ..."


@pytest.mark.faults
@pytest.mark.timeout(120)
def test_interrupted_run_removes_its_namespaces_bridge_rules_nodes_and_mounts(
    netns_ready: None, tmp_path: Path
) -> None:
    command = [BIN / "quorumq-jepsen", "run", "--time", "60", "--nodes", "3", "--out", str(tmp_path)]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as suite:
        assert suite.stderr is not None
        bridge = ""
        for line in suite.stderr:
            if "cluster ready on bridge" in line:
                bridge = line.split("bridge ")[1].split(";")[0]
            if bridge and FAULT_LINE.match(line):
                break  # the schedule runs: interrupt the run in the middle of its work
        assert bridge.startswith("qqj"), "the run never got its cluster ready"
        assert processes_mentioning(str(tmp_path))
        assert str(tmp_path) in Path("/proc/self/mountinfo").read_text()  # power: lazy filesystems
        suite.send_signal(signal.SIGINT)
        suite.communicate(timeout=60)  # keep draining stderr: a full pipe would block its shutdown
    assert run_quietly(["ip", "link", "show", bridge]).returncode != 0
    assert not [
        ns for ns in run_quietly(["ip", "netns", "list"]).stdout.split() if ns.startswith(f"{bridge}n")
    ]
    assert f"-i {bridge} " not in run_quietly(["iptables", "-S", "FORWARD"]).stdout
    assert processes_mentioning(str(tmp_path)) == []  # nodes and lazy filesystem daemons
    assert str(tmp_path) not in Path("/proc/self/mountinfo").read_text()  # no mount left behind


def run_quietly(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False)
