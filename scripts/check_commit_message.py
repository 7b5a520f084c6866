"""The commit-msg hook: a subject of at most 72 characters, then a blank line before any body.

    python scripts/check_commit_message.py .git/COMMIT_EDITMSG

Lines git strips (comments, from `#`) are ignored; a merge or revert git wrote keeps its own subject.
Exits 1 naming what is wrong.
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_SUBJECT = 72


def problems(message: str) -> list[str]:
    """What is wrong with a commit message (empty when nothing)."""
    lines = [line for line in message.splitlines() if not line.startswith("#")]
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return ["the message is empty"]
    subject = lines[0]
    if subject.startswith(("Merge ", 'Revert "')):
        return []
    found = []
    if len(subject) > MAX_SUBJECT:
        found.append(
            f"the subject has {len(subject)} characters (at most {MAX_SUBJECT}): say the why in the body"
        )
    if len(lines) > 1 and lines[1].strip():
        found.append("the subject needs a blank line after it, before the body")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: check_commit_message.py MESSAGE_FILE", file=sys.stderr)
        return 2
    found = problems(Path(argv[1]).read_text(encoding="utf-8"))
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
