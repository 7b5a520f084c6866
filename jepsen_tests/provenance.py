"""Where a run came from: its exact command line and the git commit of the code it ran on.

Recorded in every verdict.json so that a results summary can group runs by command line and say which
commit they tested. `dirty` is True when tracked files differed from that commit at run time.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

SOURCE_TREE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Provenance:
    """The command line, and the commit (None outside a git checkout) with its dirty flag."""

    command: str
    commit: str | None
    dirty: bool


def provenance(command: str, tree: Path = SOURCE_TREE) -> Provenance:
    """The provenance of a run started now by `command` from the source tree `tree`."""
    head = _git(tree, "rev-parse", "HEAD")
    if head is None:
        return Provenance(command, None, False)
    changes = _git(tree, "status", "--porcelain", "--untracked-files=no")
    return Provenance(command, head, bool(changes))


def _git(tree: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()
