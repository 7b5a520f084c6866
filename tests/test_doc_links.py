"""scripts/check_links.py: the repository's links hold, and a broken link or anchor is reported."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_links.py"
PAGE = "docs" + "/page.md"  # spelled apart: this file itself names no page the repository lacks
GONE = "docs" + "/gone.md"


def check_links(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True, timeout=60)


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_every_link_and_docs_mention_of_the_repository_resolves() -> None:
    result = check_links(ROOT)
    assert result.returncode == 0, result.stdout


def test_links_anchors_and_code_that_hold_pass(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "README.md": f"See [the module]({PAGE}#the-queue_state-module) and [again]({PAGE}#notes-1).\n"
            "Code is not a link: `[x](gone.md)`, nor a fence:\n\n```\n[x](gone.md)\n```\n",
            PAGE: "# The `queue_state` module\n\n## Notes\n\n## Notes\n\n[up](../README.md), [top](#notes)\n",
            "tool.py": f'"""Rules in {PAGE}."""\n',
        },
    )
    result = check_links(tmp_path)
    assert result.returncode == 0, result.stdout


def test_a_broken_link_anchor_and_mention_are_each_reported(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "README.md": f"# Title\n\n[fine]({PAGE})\n[gone](missing.md)\n",
            PAGE: "# Page\n\nAt [the top](#page), not [here](#nowhere) nor [there](../README.md#page).\n",
            "tool.py": f'"""Rules in {GONE}."""\n',
        },
    )
    result = check_links(tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "README.md:4: missing.md: no such file",
        f"{PAGE}:3: #nowhere: no heading with anchor #nowhere",
        f"{PAGE}:3: ../README.md#page: no heading with anchor #page",
        f"tool.py:1: {GONE}: no such page",
    ]
