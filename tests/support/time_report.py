"""A pytest plugin that ends the run with where its time went: seconds per test directory and the
slowest tests. It prints after the warnings, just before the short summary and pytest's closing line,
so the tail of a CI log shows it, also for a run interrupted by KeyboardInterrupt (which the fault
suite's CLI makes of SIGTERM)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).parent.parent
SLOWEST = 5

_seconds: defaultdict[str, float] = defaultdict(float)
_by_test: defaultdict[str, float] = defaultdict(float)


def _area(nodeid: str) -> str:
    """`tests/node/test_x.py::t` → `node`; a test file at the top keeps its own name."""
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 else parts[-1]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds[_area(report.nodeid)] += report.duration
    _by_test[report.nodeid] += report.duration


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _seconds:
        return
    by_time = sorted(_seconds.items(), key=lambda a: -a[1])
    areas = "  ".join(f"{area} {seconds:.0f}" for area, seconds in by_time)
    terminalreporter.write_sep("-", "seconds per test directory")
    terminalreporter.write_line(areas)
    for nodeid, seconds in sorted(_by_test.items(), key=lambda t: -t[1])[:SLOWEST]:
        terminalreporter.write_line(f"{seconds:7.1f} s  {nodeid}")
