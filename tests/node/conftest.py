"""Fixtures that run real node processes on 127.0.0.1 with their own data dirs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from node_helpers import running_cluster

from cli.node_processes import ProcessCluster


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ProcessCluster]:
    """A fresh 3-node cluster per test."""
    yield from running_cluster(tmp_path, request, 3)


@pytest.fixture
def one_node(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ProcessCluster]:
    """A fresh one-node cluster per test, for client behaviour that needs a real node but no replicas."""
    yield from running_cluster(tmp_path, request, 1)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[no-untyped-def]
    """Keep each phase's report on the item so fixtures can see whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
