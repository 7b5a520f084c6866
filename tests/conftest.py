"""Marks each test by what it starts, from where it lives: `process` (node processes, nodes in this
process on real sockets, a browser), `docker` or `spark`. `make test-unit` runs the tests with none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

# Every node a test starts as a process would set 64 MiB of disk aside (cluster/store/disk_ballast.py):
# over a thousand node starts, more disk than a CI machine may have. A 1 MiB ballast still exercises it;
# the tests of the ballast itself choose their sizes, and the fault suite keeps the node's own
# (tests/jepsen/conftest.py).
os.environ.setdefault("QUORUMQ_DISK_BALLAST_BYTES", str(1 << 20))

pytest_plugins = ["support.time_report"]

MARKS = {  # a directory or file under tests/, and its mark
    "bench": "process",
    "jepsen": "process",
    "membership": "process",
    "node": "process",
    "node_simulation": "process",
    "security": "process",
    "ui": "process",
    "client/test_standalone.py": "process",
    "test_packaging.py": "process",
    "docker": "docker",
    "spark": "spark",
}


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not item.path.is_relative_to(TESTS):
            continue
        where = item.path.relative_to(TESTS)
        mark = MARKS.get(where.as_posix()) or MARKS.get(where.parts[0])
        if mark is not None:
            item.add_marker(mark)
