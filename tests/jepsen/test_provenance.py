"""A run records where it came from: its command line and the commit of its source tree, dirty or not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from jepsen_tests.provenance import Provenance, provenance
from jepsen_tests.runner import RunConfig, equivalent_command


def git(tree: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_commit_and_whether_tracked_files_differ_from_it(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git(tmp_path, "add", "code.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("not part of the code\n")
    assert provenance("cmd", tmp_path) == Provenance("cmd", head, dirty=False)
    (tmp_path / "code.py").write_text("x = 2\n")
    assert provenance("cmd", tmp_path) == Provenance("cmd", head, dirty=True)


def test_outside_a_checkout_the_commit_is_unknown(tmp_path: Path) -> None:
    assert provenance("cmd", tmp_path) == Provenance("cmd", None, dirty=False)


def test_a_run_started_from_python_records_the_equivalent_command_line() -> None:
    config = RunConfig(duration=25, nemeses=("kill", "client"), seed=3, nodes=5, queues=2)
    assert equivalent_command(config) == (
        "quorumq-jepsen run --time 25 --nemesis kill,client --seed 3 --nodes 5 --queues 2"
    )
