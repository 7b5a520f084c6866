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
