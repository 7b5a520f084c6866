"""The commit-msg hook (`scripts/check_commit_message.py`, in `.pre-commit-config.yaml`): subjects of at
most 72 characters with the why in the body, as CONTRIBUTING asks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_commit_message.py"


def check(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message)
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, check=False
    )


def test_a_short_subject_with_a_body_after_a_blank_line_passes(tmp_path: Path) -> None:
    message = "Wiped nodes rejoin as learners\n\nWhy it matters.\n# Please enter the commit message\n"
    assert check(tmp_path, message).returncode == 0


def test_rule_a_subject_over_72_characters_is_refused(tmp_path: Path) -> None:
    run = check(tmp_path, "x" * 73 + "\n")
    assert run.returncode == 1 and "73 characters" in run.stderr


def test_rule_a_body_glued_to_the_subject_is_refused(tmp_path: Path) -> None:
    run = check(tmp_path, "A subject\nand a body without the blank line\n")
    assert run.returncode == 1 and "blank line" in run.stderr


def test_an_empty_message_is_refused_and_a_merge_keeps_its_subject(tmp_path: Path) -> None:
    assert check(tmp_path, "# only a comment\n").returncode == 1
    assert check(tmp_path, "Merge branch 'wt-docs' of a long name " + "y" * 60 + "\n").returncode == 0


def test_the_hook_is_installed_for_commit_messages() -> None:
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    assert "check_commit_message.py" in config and "commit-msg" in config
