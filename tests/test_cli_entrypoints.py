"""The console scripts are installed and answer --help and --version."""

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("script", ["quorumq", "quorumq-queues"])
def test_script_prints_usage(script: str) -> None:
    result = subprocess.run([BIN / script, "--help"], capture_output=True, text=True, check=True)
    assert "Usage:" in result.stdout


@pytest.mark.parametrize("script", ["quorumq", "quorumq-queues"])
def test_script_prints_version(script: str) -> None:
    result = subprocess.run([BIN / script, "--version"], capture_output=True, text=True, check=True)
    assert "0.1.0" in result.stdout


def test_layers_import_only_downwards() -> None:
    """queue_state and raft_log never import each other or anything above them; api reaches queues only
    through cluster (its `QueueLeader` door), never the state machine or the log below it."""
    forbidden = {
        "queue_state": ("raft_log", "cluster", "api", "cli", "spark_io", "jepsen_tests"),
        "raft_log": ("queue_state", "cluster", "api", "cli", "spark_io", "jepsen_tests"),
        "cluster": ("api", "cli", "spark_io", "jepsen_tests"),
        "api": ("queue_state", "raft_log", "cli", "spark_io", "jepsen_tests"),
    }
    root = Path(__file__).resolve().parents[1]
    offenders = []
    for package, banned in forbidden.items():
        for source in (root / package).rglob("*.py"):
            for line in source.read_text().splitlines():
                stripped = line.strip()
                if stripped.startswith(("import ", "from ")):
                    module = stripped.split()[1].split(".")[0]
                    if module in banned:
                        offenders.append(f"{source.relative_to(root)}: {stripped}")
    assert offenders == []
