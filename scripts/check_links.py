"""Check the repository's Markdown links and its mentions of docs pages, without the network.

Every relative link in a *.md file must reach a file or folder, and its #anchor a heading of the
target page (GitHub's slug of an ATX heading); every plain docs/<page>.md path in a *.md or *.py
file must exist. Links with a scheme (http, https, mailto) are not followed. Prints each broken one
as file:line and exits 1.

    python scripts/check_links.py [ROOT]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

SKIPPED_DIRS = {"node_modules"}  # besides hidden folders (.venv, .git, caches) and *.egg-info

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A code span ends within its paragraph.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)\1(?!`)", re.DOTALL)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^\s<>()]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*<?([^\s<>]+)>?", re.MULTILINE)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# A docs page named from the repository's root; a link's target is checked as a link instead.
DOCS_MENTION = re.compile(r"(?<![\w/.-])(?<!\]\()docs/[\w-][\w./-]*?\.md(?![\w-])")


def files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    """Every file under root ending in one of the suffixes, outside hidden and generated folders."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS and not d.endswith(".egg-info")
        )
        yield from (Path(folder) / name for name in sorted(names) if name.endswith(suffixes))


def without_fences(text: str) -> str:
    """The text with fenced code blocks blanked out; lines and offsets are kept."""
    lines = text.split("\n")
    fence = ""
    for i, line in enumerate(lines):
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            lines[i] = " " * len(line)
        elif opening:
            fence, lines[i] = opening.group(1), " " * len(line)
    return "\n".join(lines)


def without_code(text: str) -> str:
    """The text with fenced blocks and code spans blanked out; lines and offsets are kept."""
    return CODE_SPAN.sub(lambda span: re.sub(r"[^\n]", " ", span.group()), without_fences(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text lowercased, punctuation but - and _ dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link or image shows its text
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings; a repeated slug gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in without_fences(page.read_text(encoding="utf-8")).split("\n"):
        if heading := HEADING.match(line):
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(f"{base}-{count}" if count else base)
    return found


def line_of(text: str, offset: int) -> int:
    """The 1-based line of an offset into the text."""
    return text.count("\n", 0, offset) + 1


def broken_links(root: Path, page: Path, headings: dict[Path, set[str]]) -> Iterator[tuple[int, str]]:
    """(line, message) for each link of the page whose target or anchor is missing."""
    text = without_code(page.read_text(encoding="utf-8"))
    targets = [*LINK.finditer(text), *REFERENCE.finditer(text)]
    for match in sorted(targets, key=lambda m: m.start(1)):
        target = match.group(1)
        if not target or SCHEME.match(target):
            continue
        path, _, fragment = target.partition("#")
        path, fragment = unquote(path), unquote(fragment)
        if not path:
            destination = page
        elif path.startswith("/"):
            destination = (root / path.lstrip("/")).resolve()
        else:
            destination = (page.parent / path).resolve()
        line = line_of(text, match.start(1))
        if not destination.exists() or not destination.is_relative_to(root):
            yield line, f"{target}: no such file"
        elif fragment and destination.suffix == ".md":
            if destination not in headings:
                headings[destination] = anchors(destination)
            if fragment not in headings[destination]:
                yield line, f"{target}: no heading with anchor #{fragment}"


def broken_mentions(root: Path, source: Path) -> Iterator[tuple[int, str]]:
    """(line, message) for each docs/<page>.md path the file names that does not exist."""
    text = source.read_text(encoding="utf-8")
    for match in DOCS_MENTION.finditer(text):
        if not (root / match.group()).is_file():
            yield line_of(text, match.start()), f"{match.group()}: no such page"


def check(root: Path) -> list[str]:
    """Every broken link, anchor and docs page mention under root, as 'file:line: message'."""
    root = root.resolve()
    headings: dict[Path, set[str]] = {}
    problems: list[str] = []
    for page in files(root, (".md",)):
        problems += [f"{page.relative_to(root)}:{n}: {m}" for n, m in broken_links(root, page, headings)]
    for source in files(root, (".md", ".py")):
        problems += [f"{source.relative_to(root)}:{n}: {m}" for n, m in broken_mentions(root, source)]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    problems = check(parser.parse_args(argv).root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} broken link(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
